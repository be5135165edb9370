package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/testadmin"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// largeWindow is how many records the large window holds: the issue's
// "10,000 in-flight records per partition". Under -race (make test) it is
// 2,000, still four times the ranges the page lists, so the browser tests
// stay within their minute of CI; the figures in docs/console.md are from
// a run without -race.
func largeWindow() int64 {
	if raceOn {
		return 2000
	}
	return 10000
}

// console-live-bound, measured: a share partition with 10,000 in-flight
// records in the worst shape for the console — every offset its own range
// (acquired, acknowledged, available in turn) — and what it costs: the
// JSON's size, the broker's time to build it, and the browser's time to
// draw it. The figures go to the test log and docs/console.md; the test
// fails if the page lists more ranges than its bound (500) or takes over
// 3 s to draw them (about 0.1-0.6 s on an idle or a loaded 2-core
// machine: 3 s is headroom for a busy CI runner; the row bound is what
// keeps the draw short, and it is checked on its own).
func TestLargeWindow(t *testing.T) {
	inFlight := largeWindow()
	b := sharebrokertest.Start(t, sharebrokertest.WithTestAPI(), sharebrokertest.WithProperty("num.partitions", "1"),
		sharebrokertest.WithProperty("group.share.partition.max.record.locks", fmt.Sprint(inFlight)),
		sharebrokertest.WithProperty("group.share.max.partition.max.record.locks", fmt.Sprint(inFlight)))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, groupID = "big", "bulk"
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	testadmin.SetGroupConfig(t, ctx, cl, groupID, "share.auto.offset.reset", "earliest")
	recs := make([]*kgo.Record, int(inFlight))
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "record %d", i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Acquire all of them with raw ShareFetches (no client fetching
	// behind the test's back), then accept every third and release the
	// next, leaving the rest acquired.
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[topic].ID
	epoch, acquired := int32(0), int64(0)
	for acquired < inFlight {
		if ctx.Err() != nil {
			t.Fatalf("acquired %d of %d records", acquired, inFlight)
		}
		sf := kmsg.NewPtrShareFetchRequest()
		sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr(groupID), kmsg.StringPtr("bulk-member"), epoch
		sf.MaxRecords, sf.BatchSize, sf.MaxBytes = int32(inFlight), int32(inFlight), 64<<20
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = topicID
		fp := kmsg.NewShareFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 64 << 20
		ft.Partitions = append(ft.Partitions, fp)
		sf.Topics = append(sf.Topics, ft)
		resp, err := sf.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("share fetch: %v %+v", err, resp)
		}
		for _, a := range resp.Topics[0].Partitions[0].AcquiredRecords {
			acquired += a.LastOffset - a.FirstOffset + 1
		}
		epoch++
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(groupID), kmsg.StringPtr("bulk-member"), epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for o := int64(0); o < inFlight; o++ {
		if o%3 == 0 {
			continue // stays acquired
		}
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset = o, o
		ab.AcknowledgeTypes = []int8{int8(o % 3)} // 1 accept, 2 release
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	if resp, err := ack.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, resp)
	}

	// The broker's side: the JSON a console receives, and how long
	// building it takes (the stream builds it once per tick while the
	// console is open).
	base := "http://" + b.HTTPAddr
	get := func() []byte {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/share-groups/"+groupID, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	var sg httpapi.ShareGroupJSON
	body := get()
	if err := json.Unmarshal(body, &sg); err != nil || len(sg.Partitions) != 1 || int64(len(sg.Partitions[0].Ranges)) != inFlight {
		t.Fatalf("want %d ranges: %v %.300s", inFlight, err, body)
	}
	const builds = 3
	buildStart := time.Now()
	for range builds {
		get()
	}
	perBuild := time.Since(buildStart) / builds

	p := openBrowser(t)
	p.do("open the share group", chromedp.Navigate(base+"/#/share-groups/"+groupID))
	p.waitFor("the large window drawn", fmt.Sprintf(`(() => { const sec = document.querySelector('section[data-partition="big-0"]');
		return sec && sec.querySelectorAll('tr.record').length === 500 && /of %d ranges/.test(sec.innerText); })()`, inFlight))
	first := eval[float64](p, `window.__console.lastRenderMs`)
	viewBytes := eval[int](p, `window.__console.lastViewBytes`)

	// A change re-draws the view: accept one of the acquired records.
	renders := eval[int](p, `window.__console.renders`)
	one := kmsg.NewPtrShareAcknowledgeRequest()
	one.GroupID, one.MemberID, one.ShareSessionEpoch = kmsg.StringPtr(groupID), kmsg.StringPtr("bulk-member"), epoch+1
	at.Partitions[0].AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 3, LastOffset: 3, AcknowledgeTypes: []int8{1}}}
	one.Topics = []kmsg.ShareAcknowledgeRequestTopic{at}
	if resp, err := one.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge offset 3: %v %+v", err, resp)
	}
	// The stream rebuilds a view that takes long to build less often
	// (console-live-bound): wait for up to ten builds' time.
	p.waitForWithin(10*perBuild+browserWait, "the re-draw", fmt.Sprintf(`window.__console.renders > %d`, renders))
	again := eval[float64](p, `window.__console.lastRenderMs`)

	// Responsive: a round trip through the page's event loop.
	evalStart := time.Now()
	for range 10 {
		eval[int](p, `1`)
	}
	roundTrip := time.Since(evalStart) / 10
	p.noErrors()

	summary := fmt.Sprintf("%d in-flight records as %d ranges: GET /v1/share-groups JSON %d bytes (%d compact in the stream), "+
		"built in %v; first draw %.0f ms, re-draw %.0f ms; page round trip %v",
		inFlight, len(sg.Partitions[0].Ranges), len(body), viewBytes, perBuild.Round(100*time.Microsecond), first, again, roundTrip.Round(100*time.Microsecond))
	t.Log(summary)
	if first > 3000 || again > 3000 {
		t.Errorf("drawing the large window took too long: %s", summary)
	}
	if !strings.Contains(string(body), `"state": "ACQUIRED"`) {
		t.Errorf("no acquired range in %.300s", body)
	}
}
