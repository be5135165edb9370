// Package consoletest drives the broker's browser console (httpapi's page
// at / of the HTTP listener) in a real chromium, against a broker that
// sharebrokertest starts on the manual clock, with real kgo clients.
package consoletest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/testadmin"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

var screenshot = flag.String("screenshot", "", "write a PNG of the share-group view to this file (docs/console-share-group.png)")

const (
	jobs   = "jobs"
	marker = "marker"
	group  = "workers"
)

// scenario is a broker with a share group whose kgo consumer holds ten
// records of jobs, the browser, and the clients.
type scenario struct {
	t        *testing.T
	ctx      context.Context
	b        *sharebrokertest.Broker
	admin    *kgo.Client
	consumer *kgo.Client
	base     string
}

func startScenario(t *testing.T) *scenario {
	t.Helper()
	b := sharebrokertest.Start(t, sharebrokertest.WithTestAPI(), sharebrokertest.WithProperty("num.partitions", "1"))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, jobs, marker); err != nil {
		t.Fatal(err)
	}
	testadmin.SetGroupConfig(t, ctx, admin, group, "share.auto.offset.reset", "earliest")
	for i := range 10 {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: jobs, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "job %d", i),
			Headers: []kgo.RecordHeader{{Key: "attempt", Value: []byte("1")}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A classic group with a committed offset, for the group view.
	if _, err := kadm.NewClient(admin).CommitOffsets(ctx, "readers", kadm.OffsetsFromRecords(kgo.Record{Topic: jobs, Partition: 0, Offset: 3})); err != nil {
		t.Fatal(err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(jobs, marker), kgo.ShareGroup(group),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumer.Close)
	return &scenario{t: t, ctx: ctx, b: b, admin: admin, consumer: consumer, base: "http://" + b.HTTPAddr}
}

// poll polls the consumer until it has n records of topic (records of
// other topics are accepted on the way), within the scenario's deadline.
func (s *scenario) poll(topic string, n int) []*kgo.Record {
	s.t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		if s.ctx.Err() != nil {
			s.t.Fatalf("polled %d of %d records of %s before the deadline", len(got), n, topic)
		}
		fs := s.consumer.PollFetches(s.ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == topic {
				got = append(got, r)
			} else {
				r.Ack(kgo.AckAccept)
			}
		})
	}
	return got
}

// pollQuietly is poll for another goroutine: it returns what it has when
// the deadline passes instead of failing the test.
func (s *scenario) pollQuietly(topic string, n int) []*kgo.Record {
	got := []*kgo.Record{}
	for len(got) < n && s.ctx.Err() == nil {
		s.consumer.PollFetches(s.ctx).EachRecord(func(r *kgo.Record) {
			if r.Topic == topic {
				got = append(got, r)
			} else {
				r.Ack(kgo.AckAccept)
			}
		})
	}
	return got
}

// window waits until partition 0 of topic in the share group satisfies ok
// in the broker's own JSON.
func (s *scenario) window(topic string, ok func(httpapi.SharePartitionJSON) bool) {
	s.t.Helper()
	for {
		if sg, found := s.b.ShareGroup(group); found {
			for _, p := range sg.Partitions {
				if p.Topic == topic && ok(p) {
					return
				}
			}
		}
		select {
		case <-s.ctx.Done():
			sg, _ := s.b.ShareGroup(group)
			s.t.Fatalf("share partition %s-0 never got there: %+v", topic, sg)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// get answers a GET of the HTTP listener.
func (s *scenario) get(path string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(s.ctx, "GET", s.base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// jobRows is the JS count of jobs-0's record rows in a state, and
// whether each shows what want says.
func jobRows(state, check string) string {
	return fmt.Sprintf(`(() => { const rows = [...document.querySelectorAll('section[data-partition="jobs-0"] tr.record[data-state="%s"]')];
		return rows.length === 10 && rows.every((tr) => { const c = tr.cells; return %s; }); })()`, state, check)
}

// The scenario in a real browser: a kgo share consumer acquires
// ten records, the console shows them acquired with live countdowns on
// the broker clock, the console's own action advances the clock past the
// lock, the records show available with one delivery, the consumer takes
// them again and accepts them, the window empties; the page reports no
// error, and a keyboard user reaches every view (console-keyboard).
func TestShareGroupScenario(t *testing.T) {
	started := time.Now()
	s := startScenario(t)
	got := s.poll(jobs, 10)
	s.window(jobs, func(p httpapi.SharePartitionJSON) bool { return p.InFlightRecords == 10 })
	t.Logf("consumer holds %d records", len(got))
	// Keep the consumer off jobs while their locks run out, so nothing
	// takes them back the moment they expire: pause the topic (kgo's next
	// fetches leave it out), and answer the fetch parked on it now with a
	// record of marker; kgo fetches no more until that one is polled. (A
	// fetch left parked would time out in kgo after its wait plus 5 s of
	// real time, closing the session.)
	s.consumer.PauseFetchTopics(jobs)
	if err := s.admin.ProduceSync(s.ctx, &kgo.Record{Topic: marker, Value: []byte("m")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s.window(marker, func(p httpapi.SharePartitionJSON) bool { return p.InFlightRecords == 1 })

	p := openBrowser(t)
	t.Logf("%v: the browser is up", time.Since(started).Round(time.Millisecond))
	p.do("open the share group", chromedp.Navigate(s.base+"/#/share-groups/"+group))
	// Ten rows, ACQUIRED in colour and in text, owned, delivered once, each
	// counting down from the 30 s lock on the broker clock (which the
	// manual clock holds still: 30.0 s).
	p.waitFor("ten acquired records with countdowns", jobRows("ACQUIRED",
		`c[1].textContent === 'ACQUIRED' && getComputedStyle(c[1].firstChild).backgroundColor !== 'rgba(0, 0, 0, 0)' &&
		 c[2].textContent !== '' && c[3].textContent === '1' && c[4].textContent === '30.0 s'`))

	if *screenshot != "" {
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s, %d bytes", *screenshot, len(png))
	}

	// The console's action: a POST with its header, through the
	// cross-site guard (console-cross-site).
	p.do("advance the clock from the console",
		chromedp.SetValue(chromedp.CSS(`#actions form[aria-label="Clock"] input[name="duration"]`), "31s"),
		chromedp.Click(chromedp.CSS(`#actions form[aria-label="Clock"] button`)))
	p.waitFor("the action's answer", `document.getElementById('action-result').textContent.startsWith('advance clock: done')`)
	p.waitFor("ten available records, delivered once", jobRows("AVAILABLE",
		`c[1].textContent === 'AVAILABLE' && c[2].textContent === '' && c[3].textContent === '1' && c[4].textContent === ''`))

	// The consumer resumes: it takes the jobs again (a fetch parked
	// without them answers once the clock passes its wait) and accepts
	// them. The window empties and its start moves past them.
	s.consumer.ResumeFetchTopics(jobs)
	polled := make(chan []*kgo.Record, 1)
	go func() { polled <- s.pollQuietly(jobs, 10) }()
	var again []*kgo.Record
	steps := 0
	for again == nil {
		select {
		case again = <-polled:
		case <-time.After(100 * time.Millisecond):
			s.b.Advance(time.Second)
			steps++
		case <-s.ctx.Done():
			t.Fatal("the consumer never got the expired records again")
		}
	}
	t.Logf("the consumer has the expired records again after %d clock steps of 1 s", steps)
	if len(again) < 10 {
		t.Fatalf("the consumer got %d of the 10 expired records again", len(again))
	}
	for _, r := range again {
		r.Ack(kgo.AckAccept)
	}
	// kgo sends the acknowledgements with its next fetch, after the one
	// parked now, which answers when the clock passes its wait: move the
	// clock in small steps (far from the new locks' 30 s) until they are
	// sent.
	flushed := make(chan error, 1)
	go func() { flushed <- s.consumer.FlushAcks(s.ctx) }()
	for done := false; !done; {
		select {
		case err := <-flushed:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(100 * time.Millisecond):
			s.b.Advance(500 * time.Millisecond)
		case <-s.ctx.Done():
			t.Fatal("the acknowledgements were never sent")
		}
	}
	s.window(jobs, func(p httpapi.SharePartitionJSON) bool { return p.SPSO == 10 && p.InFlightRecords == 0 })
	p.waitFor("the accepted records leave the window", `(() => {
		const sec = document.querySelector('section[data-partition="jobs-0"]');
		return sec && sec.querySelectorAll('tr.record').length === 0 && /SPSO\s*10/.test(sec.innerText) && /In flight\s*0/.test(sec.innerText); })()`)

	t.Logf("%v: the window is empty", time.Since(started).Round(time.Millisecond))
	t.Run("story", func(t *testing.T) {
		p := p.in(t)
		const offset = 3
		path := fmt.Sprintf("/v1/share-groups/%s/topics/%s/partitions/0/records/%d", group, jobs, offset)
		if status, body := s.get(path); status != http.StatusOK {
			t.Fatalf("GET %s answered %d: %s", path, status, body)
		}
		p.do("open the story", chromedp.Navigate(s.base+"/#"+path[len("/v1"):]))
		p.waitFor("the story's events in order", `(() => {
			const want = ['acquired', 'lock_expired', 'acquired', 'acknowledged'];
			const got = [...document.querySelectorAll('ol.story li')].map((li) => li.dataset.event).filter((e) => want.includes(e));
			return JSON.stringify(got) === JSON.stringify(want); })()`)
	})

	t.Run("keyboard", func(t *testing.T) { keyboardReachesEveryView(t, p.in(t), s) })
	p.noErrors()
	t.Logf("browser scenario took %v", time.Since(started).Round(time.Millisecond))
}

// console-keyboard: from the overview, Tab and Enter alone reach a topic,
// its records, a classic group and the share group, and from the share
// group's window a record's story; the focused link is visibly outlined.
func keyboardReachesEveryView(t *testing.T, p *page, s *scenario) {
	p.do("open the overview", chromedp.Navigate(s.base+"/#/"))
	p.waitFor("the overview's groups", `document.querySelector('a[href="#/share-groups/workers"]') !== null`)
	for _, step := range []struct{ link, hash, shows string }{
		{"#/topics/jobs", "#/topics/jobs", `document.querySelectorAll('td.data').length > 0`},
		{"#/", "#/", `document.querySelector('a[href="#/groups/readers"]') !== null`},
		{"#/groups/readers", "#/groups/readers", `/Committed offsets/.test(document.body.innerText) && /jobs\s+0\s+4\s+10\s+6/.test(document.body.innerText)`},
		{"#/", "#/", `document.querySelector('a[href="#/share-groups/workers"]') !== null`},
		{"#/share-groups/workers", "#/share-groups/workers", `document.querySelector('section[data-partition="jobs-0"]') !== null`},
	} {
		tabTo(t, p, step.link)
		p.do("press Enter on "+step.link, chromedp.KeyEvent(kb.Enter))
		p.waitFor(step.hash, fmt.Sprintf(`location.hash === %q && (%s)`, step.hash, step.shows))
	}
}

// tabTo presses Tab until the link to href has the focus, and checks the
// focus is drawn.
func tabTo(t *testing.T, p *page, href string) {
	t.Helper()
	for range 80 {
		p.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if eval[string](p, `document.activeElement ? document.activeElement.getAttribute('href') || '' : ''`) == href {
			if style := eval[string](p, `getComputedStyle(document.activeElement).outlineStyle`); style == "none" {
				t.Fatalf("the focused link %s has no visible outline", href)
			}
			return
		}
	}
	t.Fatalf("80 presses of Tab never reached the link %s\npage: %s", href, p.text())
}
