package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
)

// The two-consumer stall (share-groups.md §2.11), as Kafka has it. Every
// test here builds the same full window: limit 100
// (share.partition.max.record.locks), producer batches 0-49, 50-99 and
// 100-149; member B (raw requests) takes 0-99, releases 0-49 and accepts
// 50-99, so whoever takes 0-49 back holds the head of a window that SPSO
// cannot pass, and 100-149 wait in the log.

// stallEnv is that window, with B's connection and the timers pending
// once it is built.
type stallEnv struct {
	*shareEnv
	b    *rawShare
	base int
}

func newStallEnv(t *testing.T) *stallEnv {
	t.Helper()
	e := newShareEnv(t, "share.partition.max.record.locks", "100")
	// The broker arms its retention timer as it starts; count from there.
	waitPending(t, e.clock, 1)
	producer := dialRaw(t, e.addr)
	producer.createTopics(semTopic)
	for range 3 {
		if p := producer.produce(semTopic, 0, batchtest.Plain(50).Build()); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	b := e.raw()
	if got := partitionOf(t, b.fetch(2, "b", 0, nil, func(r *kmsg.ShareFetchRequest) { r.MaxRecords = 100 })).AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 99 {
		t.Fatalf("B acquired %+v, want 0-99", got)
	}
	if resp := b.ack(2, "b", 1, false, []ackSpec{{0, 49, []int8{2}}, {50, 99, []int8{1}}}); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("B's release and accept: %+v", resp)
	}
	// The retention timer and the lock service's, armed at B's lock
	// deadline (later locks wait behind it); a parked fetch adds one, a
	// joining kgo member its session.
	return &stallEnv{shareEnv: e, b: b, base: e.clock.Pending()}
}

// parkB sends B's next ShareFetch (session epoch 2) with a MaxWait no test
// reaches, and returns it with its correlation ID.
func (e *stallEnv) parkB() (*kmsg.ShareFetchRequest, int32) {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(semGroup), kmsg.StringPtr("b"), 2
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 60_000, 1, 1<<20, 500, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = e.b.topicID
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return req, e.b.c.send(req)
}

// spso reads the share-partition start offset on a connection of its own.
func (e *stallEnv) spso() int64 {
	e.t.Helper()
	probe := e.raw()
	return probe.describeOffsets(semGroup, map[string][]int32{semTopic: {0}}).Topics[0].Partitions[0].StartOffset
}

// wantB reads B's parked fetch's answer: 100-149, acquired when the clock
// stood at want since start — A's MaxWait, not B's.
func (e *stallEnv) wantB(req *kmsg.ShareFetchRequest, corr int32, start time.Time, want time.Duration) {
	e.t.Helper()
	got := partitionOf(e.t, e.b.c.recv(req, corr, 10*time.Second).(*kmsg.ShareFetchResponse)).AcquiredRecords
	if len(got) != 1 || got[0].FirstOffset != 100 || got[0].LastOffset != 149 || got[0].DeliveryCount != 1 {
		e.t.Fatalf("B acquired %+v, want 100-149 at delivery 1", got)
	}
	if waited := e.clock.Now().Sub(start); waited != want {
		e.t.Fatalf("B's fetch answered after %v on the broker clock, want %v", waited, want)
	}
	if got := e.spso(); got != 100 {
		e.t.Fatalf("SPSO %d after A's acknowledgements, want 100", got)
	}
}

// §2.11 full-window-parks and one-request-per-connection, with kgo: A
// holds the head of the full window, its next ShareFetch parks on it, and
// its acknowledgements wait in kgo behind that fetch (a share source sends
// one request at a time). B's fetch, parked on the same window, waits for
// A's fetch to reach its MaxWait — and completes as soon as A's
// acknowledgements then arrive, long before its own MaxWait.
func TestShareStallAcksWaitBehindParkedFetch(t *testing.T) {
	e := newStallEnv(t)
	const aWait = 500 * time.Millisecond // kgo's default for share groups
	a := newShareConsumer(t, e.addr, semTopic, semGroup, kgo.FetchMaxWait(aWait), kgo.ShareMaxRecords(50))
	// Not e.poll: the clock must stand still from here, so that A's next
	// fetch waits exactly its MaxWait. 0-49 are AVAILABLE, so A's first
	// fetch needs no time to pass.
	var recs []*kgo.Record
	for e.ctx.Err() == nil && len(recs) == 0 {
		recs = a.PollFetches(e.ctx).Records()
	}
	if len(recs) != 50 || recs[0].Offset != 0 || recs[0].DeliveryCount() != 2 {
		t.Fatalf("A polled %d records from %d, want 0-49 at delivery 2", len(recs), recs[0].Offset)
	}
	// A's next fetch parks: nothing in the window is AVAILABLE, and the
	// window has no room for 100-149.
	waitPending(t, e.clock, e.base+2)
	start := e.clock.Now()

	// A is done with its records. Paused, its next request carries only
	// the acknowledgements (and forgets the partition), so what they free
	// goes to B; unpaused, A would acquire it in that same request.
	a.PauseFetchPartitions(map[string][]int32{semTopic: {0}})
	for _, r := range recs {
		r.Ack(kgo.AckAccept)
	}
	req, corr := e.parkB()
	waitPending(t, e.clock, e.base+3)

	// Just short of A's MaxWait nothing has moved: A's acknowledgements
	// are still in kgo.
	e.clock.Advance(aWait - time.Millisecond)
	if got := e.spso(); got != 0 {
		t.Fatalf("SPSO %d before A's fetch answered, want 0", got)
	}
	// A's fetch answers empty at its MaxWait; kgo then sends the
	// acknowledgements, and B's fetch completes with the next batch.
	e.clock.Advance(time.Millisecond)
	e.wantB(req, corr, start, aWait)
}

// §2.11 one-request-per-connection, on the wire: the broker serves one
// request per connection at a time, as Kafka's network layer does (it
// mutes a connection from reading a request until the response is sent),
// so a ShareAcknowledge pipelined behind a parked ShareFetch on the same
// connection is read only when that fetch answers.
func TestShareAckPipelinedBehindParkedFetch(t *testing.T) {
	e := newStallEnv(t)
	a := e.raw()
	if got := partitionOf(t, a.fetch(2, "a", 0, nil, func(r *kmsg.ShareFetchRequest) { r.MaxRecords = 50 })).AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 49 || got[0].DeliveryCount != 2 {
		t.Fatalf("A acquired %+v, want 0-49 at delivery 2", got)
	}
	req, corr := e.parkB()
	waitPending(t, e.clock, e.base+1)
	start := e.clock.Now()

	// A's fetch parks; its acknowledgement follows on the same connection
	// without waiting for the answer, as a pipelining client would send it.
	const aWait = 500 * time.Millisecond
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.Version = 2
	fetch.GroupID, fetch.MemberID, fetch.ShareSessionEpoch = kmsg.StringPtr(semGroup), kmsg.StringPtr("a"), 1
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes, fetch.MaxRecords, fetch.BatchSize = int32(aWait.Milliseconds()), 1, 1<<20, 50, 50
	fetchCorr := a.c.send(fetch)
	waitPending(t, e.clock, e.base+2)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(semGroup), kmsg.StringPtr("a"), 2
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = a.topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 49, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	ackCorr := a.c.send(ack)

	e.clock.Advance(aWait - time.Millisecond)
	if got := e.spso(); got != 0 {
		t.Fatalf("SPSO %d while A's fetch waits, want 0: the acknowledgement behind it was served", got)
	}
	// At A's MaxWait its fetch answers, with nothing; only then is the
	// acknowledgement read, and it wakes B at once.
	e.clock.Advance(time.Millisecond)
	fresp := a.c.recv(fetch, fetchCorr, 10*time.Second).(*kmsg.ShareFetchResponse)
	if fresp.ErrorCode != 0 {
		t.Fatalf("A's fetch: error %d", fresp.ErrorCode)
	}
	for _, rt := range fresp.Topics {
		for _, rp := range rt.Partitions {
			if len(rp.AcquiredRecords) != 0 {
				t.Fatalf("A's parked fetch acquired %+v", rp.AcquiredRecords)
			}
		}
	}
	aresp := a.c.recv(ack, ackCorr, 10*time.Second).(*kmsg.ShareAcknowledgeResponse)
	if aresp.ErrorCode != 0 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("A's acknowledgement: %+v", aresp)
	}
	e.wantB(req, corr, start, aWait)
}
