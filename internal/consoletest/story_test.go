package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// cannedConsole serves the console of b, except that the event stream of
// each path in views answers that JSON: the console's drawing of JSON
// the broker does not produce here (yet) is tested on its own.
func cannedConsole(t *testing.T, b *sharebrokertest.Broker, views map[string]string) string {
	t.Helper()
	target, err := url.Parse("http://" + b.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/events", func(w http.ResponseWriter, r *http.Request) {
		watch := r.URL.Query()["watch"]
		body, ok := views[watch[0]]
		if len(watch) != 1 || !ok {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: clock\ndata: {\"now\":\"2026-01-01T00:01:00Z\"}\n\n")
		data, _ := json.Marshal(map[string]any{"path": watch[0], "status": 200, "body": json.RawMessage(body)})
		fmt.Fprintf(w, "event: view\ndata: %s\n\n", data)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.Handle("/", proxy)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The record story view draws the record-story JSON
// (GET /v1/share-groups/{g}/topics/{t}/partitions/{p}/records/{o}) as it
// is: every event in order with its broker-clock time and details, the
// dead-letter copy linked to its record in the DLQ topic, and the note
// that older events were dropped when the ring was full.
func TestStoryView(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithTestAPI())
	// The topics the canned JSON names exist, so the links lead somewhere.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "jobs", "dlq.workers"); err != nil {
		t.Fatal(err)
	}
	const path = "/v1/share-groups/workers/topics/jobs/partitions/0/records/42"
	const story = `{"group":"workers","topic":"jobs","partition":0,"offset":42,"now":"2026-01-01T00:01:00Z","record":null,
	"events":[
	 {"time":"2026-01-01T00:00:00Z","event":"acquired","member":"m-1","delivery_count":1,"lock_deadline":"2026-01-01T00:00:30Z"},
	 {"time":"2026-01-01T00:00:30Z","event":"lock_expired","member":"m-1","delivery_count":1},
	 {"time":"2026-01-01T00:00:31Z","event":"acquired","member":"m-2","delivery_count":2,"lock_deadline":"2026-01-01T00:01:01Z"},
	 {"time":"2026-01-01T00:00:40Z","event":"acknowledged","member":"m-2","type":"reject"},
	 {"time":"2026-01-01T00:00:40Z","event":"archived","reason":"rejected"},
	 {"time":"2026-01-01T00:00:40Z","event":"dead_lettered","dlq_topic":"dlq.workers","dlq_partition":0,"dlq_offset":7}],
	"truncated":true}`
	// The share-group view's fields beside the window: lag, archived
	// ranges with their reasons, dead-letter copies.
	const window = `{"now":"2026-01-01T00:01:00Z","group":null,"partitions":[{"topic":"jobs","topic_id":"x","partition":0,"leader":0,
	 "spso":40,"speo":43,"in_flight_records":2,"next_fetch_offset":44,"lag":5,
	 "ranges":[{"first_offset":40,"last_offset":41,"state":"ACQUIRED","owner":"m-2","delivery_count":2,"lock_deadline":"2026-01-01T00:01:10Z"},
	  {"first_offset":42,"last_offset":42,"state":"ARCHIVED","delivery_count":2},{"first_offset":43,"last_offset":43,"state":"AVAILABLE","delivery_count":0}],
	 "archived":[{"first_offset":42,"last_offset":42,"reason":"rejected","time":"2026-01-01T00:00:40Z"}],
	 "dead_letters":[{"offset":42,"dlq_topic":"dlq.workers","dlq_partition":0,"dlq_offset":7}]}]}`
	base := cannedConsole(t, b, map[string]string{path: story, "/v1/share-groups/workers": window})
	p := openBrowser(t)

	p.do("open the story", chromedp.Navigate(base+"/#"+path[len("/v1"):]))
	p.waitFor("six events in order", `JSON.stringify([...document.querySelectorAll('ol.story li')].map((li) => li.dataset.event)) ===
		JSON.stringify(['acquired', 'lock_expired', 'acquired', 'acknowledged', 'archived', 'dead_lettered'])`)
	for what, expr := range map[string]string{
		"times and details": `(() => { const li = [...document.querySelectorAll('ol.story li')].map((x) => x.innerText);
			return li[0].includes('2026-01-01T00:00:00Z') && li[0].includes('m-1') && li[0].includes('delivery 1') &&
			       li[2].includes('delivery 2') && li[3].includes('as reject') && li[4].includes('(rejected)'); })()`,
		"the DLQ link":  `document.querySelector('ol.story a[href="#/topics/dlq.workers?partition=0&offset=7"]') !== null`,
		"the ring note": `/dropped from the bounded ring/.test(document.body.innerText)`,
		"no record now": `/not in the in-flight window now/.test(document.body.innerText)`,
	} {
		p.waitFor(what, expr)
	}

	p.do("open the share group", chromedp.Navigate(base+"/#/share-groups/workers"))
	for what, expr := range map[string]string{
		"lag":            `/Lag\s*5/.test(document.querySelector('section[data-partition="jobs-0"]').innerText)`,
		"archived":       `/42\s*rejected/.test(document.body.innerText)`,
		"dead letter":    `document.querySelector('a[href="#/topics/dlq.workers?partition=0&offset=7"]') !== null`,
		"the countdown":  `document.querySelector('tr.record[data-offset="40"] .countdown').textContent === '10.0 s'`,
		"the story link": `document.querySelector('a[href="#/share-groups/workers/topics/jobs/partitions/0/records/42"]') !== null`,
	} {
		p.waitFor(what, expr)
	}
	// console-keyboard: from the share group, Tab and Enter reach the
	// record's story, and from it the dead-letter copy in the DLQ topic.
	tabTo(t, p, "#/share-groups/workers/topics/jobs/partitions/0/records/42")
	p.do("press Enter on the story link", chromedp.KeyEvent(kb.Enter))
	p.waitFor("the story by keyboard", `document.querySelectorAll('ol.story li').length === 6`)
	tabTo(t, p, "#/topics/dlq.workers?partition=0&offset=7")
	p.do("press Enter on the DLQ link", chromedp.KeyEvent(kb.Enter))
	p.waitFor("the DLQ topic's view", `location.hash === '#/topics/dlq.workers?partition=0&offset=7' && /Topic dlq.workers/.test(document.body.innerText)`)
	p.noErrors()
}
