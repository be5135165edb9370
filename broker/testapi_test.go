package broker_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/locktimer"
)

func httpPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, out
}

// With the test API on, the broker runs on real time plus an offset: one
// POST moves it past a record's lock, which has expired when the POST
// returns, so the record goes to another member with no sleeping.
func TestTestAPIAdvanceExpiresLock(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{EnableTestAPI: true})
	e.produce("r0")
	holder := e.raw() // raw, so nothing fetches r0 back behind the test
	if p := partitionOf(t, holder.fetch(2, "holder", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("holder acquired %+v", p.AcquiredRecords) // held, never acknowledged
	}

	before := time.Now()
	status, body := httpPost(t, base+"/v1/test/clock/advance", `{"duration":"15s"}`)
	if status != http.StatusOK {
		t.Fatalf("advance: %d %s", status, body)
	}
	var now httpapi.ClockJSON
	if err := json.Unmarshal(body, &now); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(time.RFC3339Nano, now.Now); err != nil || at.Before(before.Add(15*time.Second)) {
		t.Fatalf("clock after advance reads %q (%v), want real time + 15 s", now.Now, err)
	}
	// Already expired when the POST returned.
	if got := metricValue(t, scrape(t, base), "sharebroker_share_lock_expirations_total", nil); got != 1 {
		t.Fatalf("lock expirations after advance: %v, want 1", got)
	}
	c2, _ := e.consumer()
	one(t, e.poll(c2), "r0", 2)
}

func TestTestAPIRejectsBadRequests(t *testing.T) {
	_, base := newHTTPShareEnv(t, broker.Config{EnableTestAPI: true})
	for _, body := range []string{``, `{"duration":"soon"}`, `{"duration":"-1s"}`, `{"seconds":3}`} {
		if status, out := httpPost(t, base+"/v1/test/clock/advance", body); status != http.StatusBadRequest {
			t.Errorf("advance with %q: status %d %s, want 400", body, status, out)
		}
	}
	if status, out := httpGet(t, base+"/v1/test/clock"); status != http.StatusOK {
		t.Errorf("GET clock: %d %s", status, out)
	}
	if status, _ := httpGet(t, base+"/v1/test/clock/advance"); status != http.StatusMethodNotAllowed {
		t.Errorf("GET advance: status %d, want 405", status)
	}
}

// Rule: clock-bounded. An advance that would take the clock past
// locktimer.MaxTime answers 400 and moves nothing; before the bound,
// 2562047h47m answered 200 and the clock went backwards.
func TestTestAPIAdvanceBounded(t *testing.T) {
	_, base := newHTTPShareEnv(t, broker.Config{EnableTestAPI: true})
	before := time.Now()
	for _, d := range []string{"2562047h47m", "2562047h47m16.854775807s", "1600000h"} {
		status, out := httpPost(t, base+"/v1/test/clock/advance", `{"duration":"`+d+`"}`)
		if status != http.StatusBadRequest || !strings.Contains(string(out), "may not pass 2200") {
			t.Errorf("advance by %s: %d %s, want 400 naming the bound", d, status, out)
		}
	}
	_, body := httpGet(t, base+"/v1/test/clock")
	var now httpapi.ClockJSON
	if err := json.Unmarshal(body, &now); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(time.RFC3339Nano, now.Now); err != nil || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("clock after refused advances reads %q (%v), want real time", now.Now, err)
	}
}

// A clock that cannot move makes the endpoint answer 409, not pretend.
func TestTestAPIRealClockConflict(t *testing.T) {
	_, base := newHTTPShareEnv(t, broker.Config{EnableTestAPI: true, Clock: locktimer.RealClock{}})
	if status, out := httpPost(t, base+"/v1/test/clock/advance", `{"duration":"1s"}`); status != http.StatusConflict {
		t.Fatalf("advance on the real clock: %d %s, want 409", status, out)
	}
}
