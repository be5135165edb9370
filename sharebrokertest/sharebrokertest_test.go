package sharebrokertest_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// The package's promise: a broker clients use, a clock the test moves,
// and the share window visible in-process.
func TestStartConsumeAdvanceInspect(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithProperty("num.partitions", "1"), sharebrokertest.WithHTTP())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("jobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	if _, err := req.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Value: []byte("job-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Acquire the record with a raw ShareFetch, so no client fetches it
	// again behind the test's back.
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("jobs")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("worker-1")
	sf.MaxRecords, sf.BatchSize, sf.MaxBytes = 10, 10, 1<<20
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = mresp.Topics[0].TopicID
	tp.Partitions = append(tp.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	sf.Topics = append(sf.Topics, tp)
	fresp, err := sf.RequestWith(ctx, admin)
	if err != nil || len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions[0].AcquiredRecords) != 1 {
		t.Fatalf("share fetch: %v %+v", err, fresp)
	}

	window, ok := b.ShareGroup("g")
	if !ok || len(window.Partitions) != 1 || len(window.Partitions[0].Ranges) != 1 {
		t.Fatalf("window after acquiring: %+v", window)
	}
	r := window.Partitions[0].Ranges[0]
	if r.State != "ACQUIRED" || r.Owner != "worker-1" || r.DeliveryCount != 1 {
		t.Fatalf("acquired range: %+v", r)
	}
	if want := sharebrokertest.DefaultStart.Add(30 * time.Second).Format(time.RFC3339Nano); r.LockDeadline != want {
		t.Fatalf("lock deadline %s, want %s", r.LockDeadline, want)
	}

	// RENEW (KIP-1222) 10 s later: same owner and count, the deadline
	// moves to 10 s + the full 30 s lock.
	b.Advance(10 * time.Second)
	ack := func(epoch int32, renew bool, typ int8) {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = kmsg.StringPtr("g"), kmsg.StringPtr("worker-1"), epoch, renew
		at := kmsg.NewShareAcknowledgeRequestTopic()
		at.TopicID = tp.TopicID
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.AcknowledgeTypes = []int8{typ}
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
		at.Partitions = append(at.Partitions, ap)
		req.Topics = append(req.Topics, at)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("acknowledge type %d: %v %+v", typ, err, resp)
		}
	}
	ack(1, true, 4)
	window, _ = b.ShareGroup("g")
	r = window.Partitions[0].Ranges[0]
	if want := sharebrokertest.DefaultStart.Add(40 * time.Second).Format(time.RFC3339Nano); r.State != "ACQUIRED" ||
		r.Owner != "worker-1" || r.DeliveryCount != 1 || r.LockDeadline != want {
		t.Fatalf("after RENEW: %+v, want the lock until %s", r, want)
	}

	// Expiry: 30 s after the renewal the record is available again.
	b.Advance(30 * time.Second)
	window, _ = b.ShareGroup("g")
	if r := window.Partitions[0].Ranges[0]; r.State != "AVAILABLE" || r.Owner != "" || r.DeliveryCount != 1 {
		t.Fatalf("after the lock expired: %+v", r)
	}

	// Reacquire and ACCEPT: the window empties and the start moves past it.
	fresp, err = sf.RequestWith(ctx, admin)
	if err != nil || fresp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v %+v", err, fresp)
	}
	ack(-1, false, 1) // closing: acknowledge and end the session
	window, _ = b.ShareGroup("g")
	if p := window.Partitions[0]; p.SPSO != 1 || len(p.Ranges) != 0 {
		t.Fatalf("after ACCEPT: %+v", p)
	}

	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + b.HTTPAddr + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestStartRejectsBadProperty(t *testing.T) {
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }() // Fatalf ends the function, as it would a test
		sharebrokertest.Start(ft, sharebrokertest.WithProperty("no.such.property", "1"))
	}()
	if !ft.failed {
		t.Fatal("Start accepted an unknown property")
	}
}

// fakeT records a fatal failure instead of ending the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fakeT) Helper()               {}

// Under WithRealClock a fetch's wait runs out on its own, as librdkafka
// and the other clients that park long fetches expect.
func TestRealClockEndsFetchWait(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithRealClock(), sharebrokertest.WithProperty("num.partitions", "1"))
	if b.Clock != nil {
		t.Fatal("Clock is set under WithRealClock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	// A fetch at the high watermark waits its full MaxWaitMillis, then
	// answers with no records: real time ends the wait.
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 200, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", mresp.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = 1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("fetch answered after %v, before its 200 ms wait", waited)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 1 {
		t.Fatalf("partition: %+v", p)
	}
	// Advance still moves the broker's time forward.
	before := b.Broker().Clock().Now()
	b.Advance(time.Hour)
	if got := b.Broker().Clock().Now().Sub(before); got < time.Hour {
		t.Fatalf("Advance(1h) moved the clock %v", got)
	}
}

// A test broker on a data directory (log.dirs): what one produced, the
// next one started on the directory serves.
func TestDataDirAcrossBrokers(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t.Run("first", func(t *testing.T) {
		b := sharebrokertest.Start(t, sharebrokertest.WithProperty("log.dirs", dir))
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("kept"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("second", func(t *testing.T) {
		b := sharebrokertest.Start(t, sharebrokertest.WithProperty("log.dirs", dir))
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("kept"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		fs := cl.PollRecords(ctx, 1)
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "v" || recs[0].Offset != 0 {
			t.Fatalf("second broker served %v (%v), want the record the first stored", recs, fs.Err0())
		}
	})
}

// fatalRecorder is a test whose Fatalf is recorded instead of failing the
// real test: it ends the calling goroutine as t.Fatalf does.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Rule: clock-bounded. Advance past locktimer.MaxTime fails the test with
// t.Fatalf (no panic) and leaves the clock where it was.
func TestAdvancePastMaxTimeFailsTheTest(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	b := sharebrokertest.Start(rec)
	before := b.Clock.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Advance(2562047*time.Hour + 47*time.Minute)
	}()
	<-done
	if !strings.Contains(rec.fatal, "may not pass 2200") {
		t.Fatalf("Advance past MaxTime: Fatalf %q, want one naming the bound", rec.fatal)
	}
	if now := b.Clock.Now(); !now.Equal(before) {
		t.Fatalf("refused Advance moved the clock from %v to %v", before, now)
	}
}
