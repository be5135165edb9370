package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"
)

// console-csp: the page and its files come with the policy that keeps
// every request on this origin, and the page itself has no inline script,
// style or handler for the policy to refuse.
func TestConsoleServedWithCSP(t *testing.T) {
	_, srv := newFake(t, false)
	for path, ctype := range map[string]string{
		"/":                    "text/html",
		"/console/":            "text/html",
		"/console/console.js":  "text/javascript",
		"/console/console.css": "text/css",
	} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), ctype) || h.Get("Content-Security-Policy") != consoleCSP ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, h)
		}
	}
	for _, want := range []string{"default-src 'self'", "connect-src 'self'", "img-src 'self' data:", "script-src 'self';"} {
		if !strings.Contains(consoleCSP, want) {
			t.Errorf("CSP %q lacks %q", consoleCSP, want)
		}
	}
	page, _ := fs.ReadFile(consoleFiles, "console/index.html")
	for _, inline := range []string{"<script>", "style=", " onclick", " onload", "javascript:", "http://", "https://"} {
		if strings.Contains(string(page), inline) {
			t.Errorf("index.html contains %q: the CSP refuses it, or it leaves the origin", inline)
		}
	}
	js, _ := fs.ReadFile(consoleFiles, "console/console.js")
	for _, risky := range []string{"innerHTML", "outerHTML", "eval(", "new Function", "http://", "https://"} {
		if strings.Contains(string(js), risky) {
			t.Errorf("console.js uses %q", risky)
		}
	}
	// The page sits at / only: other paths still answer 404.
	for _, path := range []string{"/nope", "/v1/nope", "/console/nope.js"} {
		if status, _ := do(t, srv, "GET", path, ""); status != 404 {
			t.Errorf("GET %s: %d, want 404", path, status)
		}
	}
}

// console-page-weight: everything the console loads is under 200 KB.
func TestConsolePageWeight(t *testing.T) {
	total := 0
	err := fs.WalkDir(consoleFiles, "console", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(consoleFiles, path)
		total += len(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("console page weight: %d bytes", total)
	if total >= 200<<10 {
		t.Fatalf("console files are %d bytes, over the 200 KB budget", total)
	}
}

// console-cross-site: a browser request to the test API from another
// origin is refused, and so is a same-origin browser request without the
// console's header; scripts without Origin or Sec-Fetch-Site, and the
// console with its header, change the clock.
func TestCrossSiteGuard(t *testing.T) {
	f, srv := newFake(t, true)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"cross-site page", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example", ConsoleHeader: "1"}, 403},
		{"old browser, other origin", map[string]string{"Origin": "http://evil.example", ConsoleHeader: "1"}, 403},
		{"same-site page of another port", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1", ConsoleHeader: "1"}, 403},
		{"same origin without the header", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host}, 403},
		{"the console", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host, ConsoleHeader: "1"}, 200},
		{"curl", nil, 200},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/test/clock/advance", strings.NewReader(`{"duration":"1s"}`))
		for k, v := range tc.headers {
			req.Header.Set(k, v)
		}
		before := f.clock.Now()
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		moved := !f.clock.Now().Equal(before)
		if resp.StatusCode != tc.status || moved != (tc.status == 200) {
			t.Errorf("%s: %d %s (clock moved %v), want %d", tc.name, resp.StatusCode, body, moved, tc.status)
		}
	}
	// Reads stay open to any page's GET: they change nothing.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/test/clock", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("cross-site GET of the clock: %v %v", err, resp)
	}
}

// POST /v1/test/produce appends a record that the record page shows
// back, key, value and headers as base64 and as text (record-page-bounds
// for the paging).
func TestProduceThenRecords(t *testing.T) {
	f, srv := newFake(t, true)
	if _, err := f.store.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"topic":"t","partition":0,"key":"k","value":"héllo","headers":[{"key":"h","value":"x"}]}`, 200},
		{`{"topic":"t","partition":0,"value":"second"}`, 200},
		{`{"topic":"u","partition":0,"value":"v"}`, 404},
		{`{"topic":"t","partition":3,"value":"v"}`, 404},
		{`{"topic":"t"}`, 400},
		{`{"topic":"t","partition":0,"colour":"red"}`, 400},
	} {
		if status, out := do(t, srv, "POST", "/v1/test/produce", tc.body); status != tc.status {
			t.Errorf("produce %s: %d %s, want %d", tc.body, status, out, tc.status)
		}
	}
	status, body := do(t, srv, "GET", "/v1/topics/t/partitions/0/records?offset=0&max=1", "")
	var page RecordsJSON
	if err := json.Unmarshal([]byte(body), &page); status != 200 || err != nil {
		t.Fatalf("records: %d %v %s", status, err, body)
	}
	r := page.Records
	if len(r) != 1 || r[0].Offset != 0 || string(r[0].Key) != "k" || *r[0].ValueText != "héllo" || len(r[0].Headers) != 1 ||
		*r[0].Headers[0].ValueText != "x" || page.NextOffset != 1 || page.HighWatermark != 2 || r[0].TimestampMs != f.clock.Now().UnixMilli() {
		t.Fatalf("page: %s", body)
	}
	if !strings.Contains(body, `"value": "aMOpbGxv"`) {
		t.Errorf("value not base64 in %s", body)
	}
	// No offset: the last page; a null key stays null.
	_, body = do(t, srv, "GET", "/v1/topics/t/partitions/0/records", "")
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Records) != 2 || page.Records[1].Key != nil || page.Records[1].KeyText != nil {
		t.Fatalf("last page: %s", body)
	}
	for path, want := range map[string]int{
		"/v1/topics/t/partitions/0/records?max=501":   400,
		"/v1/topics/t/partitions/0/records?max=0":     400,
		"/v1/topics/t/partitions/0/records?offset=-1": 400,
		"/v1/topics/t/partitions/x/records":           400,
		"/v1/topics/t/partitions/1/records":           404,
		"/v1/topics/u/partitions/0/records":           404,
		"/v1/topics/t":                                200,
		"/v1/topics/u":                                404,
		"/v1/groups/none":                             404,
	} {
		if status, out := do(t, srv, "GET", path, ""); status != want {
			t.Errorf("GET %s: %d %s, want %d", path, status, out, want)
		}
	}
}

// readEvent reads one server-sent event.
func readEvent(t *testing.T, r *bufio.Reader) (event string, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

// console-live-bound: the stream sends the clock and the watched view at
// once, then only what changed; bad watches are refused and the number
// of streams is capped.
func TestEventStream(t *testing.T) {
	f, srv := newFake(t, true)
	if _, err := f.store.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func() (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events?watch=/v1/topics/t", nil)
		resp, err := srv.Client().Do(req)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("open stream: %v %v", err, resp)
		}
		return resp, bufio.NewReader(resp.Body)
	}
	resp, r := open()
	defer resp.Body.Close()
	if ev, data := readEvent(t, r); ev != "clock" || !strings.Contains(data, f.clock.Now().UTC().Format(time.RFC3339Nano)) {
		t.Fatalf("first event %s %s", ev, data)
	}
	ev, data := readEvent(t, r)
	var v viewEvent
	if err := json.Unmarshal([]byte(data), &v); ev != "view" || err != nil || v.Path != "/v1/topics/t" || v.Status != 200 ||
		!strings.Contains(string(v.Body), `"high_watermark":0`) {
		t.Fatalf("first view %s %s", ev, data)
	}
	do(t, srv, "POST", "/v1/test/produce", `{"topic":"t","partition":0,"value":"v"}`)
	if ev, data := readEvent(t, r); ev != "view" || !strings.Contains(data, `"high_watermark":1`) {
		t.Fatalf("after a produce: %s %s", ev, data)
	}
	do(t, srv, "POST", "/v1/test/clock/advance", `{"duration":"5s"}`)
	if ev, data := readEvent(t, r); ev != "clock" || !strings.Contains(data, f.clock.Now().UTC().Format(time.RFC3339Nano)) {
		t.Fatalf("after a clock advance: %s %s", ev, data)
	}

	for _, q := range []string{"", "watch=/v1/events", "watch=/v1/test/clock", "watch=/v1/nope", "watch=http://x/v1/topics",
		"watch=/v1/tls/ca.pem", "watch=/v1/topics&watch=/v1/topics&watch=/v1/topics&watch=/v1/topics&watch=/v1/topics"} {
		if status, out := do(t, srv, "GET", "/v1/events?"+q, ""); status != 400 {
			t.Errorf("events?%s: %d %s, want 400", q, status, out)
		}
	}
	var more []*http.Response
	for range maxStreams - 1 {
		resp, _ := open()
		more = append(more, resp)
	}
	if status, out := do(t, srv, "GET", "/v1/events?watch=/v1/topics", ""); status != http.StatusServiceUnavailable {
		t.Errorf("stream %d: %d %s, want 503", maxStreams+1, status, out)
	}
	for _, resp := range more {
		resp.Body.Close()
	}
}

// The stream's hash leaves out a top-level "now", so a clock that moves
// does not resend an unchanged view.
func TestViewHashIgnoresNow(t *testing.T) {
	a := viewHash([]byte(`{"now":"1","partitions":[1]}`))
	if b := viewHash([]byte(`{"now":"2","partitions":[1]}`)); a != b {
		t.Error("a new now changed the hash")
	}
	if c := viewHash([]byte(`{"now":"2","partitions":[2]}`)); a == c {
		t.Error("a changed view kept its hash")
	}
}
