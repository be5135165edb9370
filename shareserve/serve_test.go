package shareserve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// These tests drive the two entry points, Service.Fetch and
// Service.Acknowledge, as the broker's handlers do, on a manual clock and
// with a fake edge: the whole order of a ShareFetch (share-groups.md
// §2.3) without a socket. Waiting is never waited out: a test advances
// the clock.

// fakeEdge is the broker's side of Edge: which partitions another node
// leads, and which topics the requester may not read.
type fakeEdge struct {
	mu       sync.Mutex
	notLed   map[TopicPartition]bool
	unread   map[storage.TopicID]bool
	readAsks int
}

var (
	errFakeNotLeader = errors.New("fake: another node leads")
	errFakeNoRead    = errors.New("fake: may not read")
)

func (e *fakeEdge) Leads(_ int32, tp TopicPartition) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.notLed[tp] {
		return errFakeNotLeader
	}
	return nil
}

func (e *fakeEdge) AuthorizeRead(_ any, id storage.TopicID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.readAsks++
	if e.unread[id] {
		return errFakeNoRead
	}
	return nil
}

// newServeFixture is newFixture with the fake edge and at most
// maxSessions sessions.
func newServeFixture(t *testing.T, partitions int32, maxSessions int) (*fixture, *fakeEdge) {
	t.Helper()
	f := newFixture(t, partitions)
	edge := &fakeEdge{notLed: map[TopicPartition]bool{}, unread: map[storage.TopicID]bool{}}
	f.s.edge = edge
	f.s.Sessions = newSessions(maxSessions)
	return f, edge
}

// fetchReq is a ShareFetch of member over partitions 0..n-1 of the
// fixture's topic, acquiring up to 500 records without waiting.
func (f *fixture) fetchReq(member string, epoch int32, n int32) FetchRequest {
	req := FetchRequest{
		Key:           SessionKey{Group: "g", Member: member},
		Owner:         member,
		Epoch:         epoch,
		Version:       2,
		MaxRecords:    500,
		MaxBytes:      -1,
		FetchMaxBytes: 1 << 20,
		Mode:          sharepartition.BatchOptimized,
	}
	for p := range n {
		req.Partitions = append(req.Partitions, PartitionAcks{TopicPartition: f.tp(p)})
	}
	return req
}

// answerOf returns tp's answer in res, or nil if res does not list it.
func answerOf(res FetchResult, tp TopicPartition) *Answer {
	for i := range res.Partitions {
		if res.Partitions[i].TopicPartition == tp {
			return res.Partitions[i].Answer
		}
	}
	return nil
}

// waitParked returns once the fetch counted in parked is parked: the
// clock then holds its deadline timer, so advancing it ends the wait.
func waitParked(t *testing.T, parked *atomic.Int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); parked.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the fetch never parked")
		}
		time.Sleep(time.Millisecond)
	}
}

// §2.4 (epoch 0 opens a session with exactly the named partitions) and
// §2.7 (acquisition from every session partition): one call opens and
// acquires, and the full answer lists every session partition.
func TestServeFetchOpensSessionAndAcquires(t *testing.T) {
	f, _ := newServeFixture(t, 2, 10)
	f.produce(t, 0, 3)
	res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 2))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.LockDuration != lockDuration {
		t.Errorf("LockDuration = %v, want the group's %v", res.LockDuration, lockDuration)
	}
	if len(res.Partitions) != 2 {
		t.Fatalf("a full answer lists %d partitions, want both", len(res.Partitions))
	}
	if got := ranges(answerOf(res, f.tp(0))); len(got) != 1 || got[0] != [3]int64{0, 2, 1} {
		t.Errorf("partition 0 acquired %v, want 0-2 at delivery 1", got)
	}
	if len(res.Fetches) != 1 || res.Fetches[0].Failed {
		t.Errorf("fetch outcomes %+v, want the topic once, not failed", res.Fetches)
	}
	if _, err := f.s.Sessions.advance(SessionKey{Group: "g", Member: "m1"}, 1, nil, nil); err != nil {
		t.Errorf("the session expects epoch 1 next: %v", err)
	}
}

// §2.3 steps 7 and 8 (acknowledgements before the fetch): records released
// by a piggybacked acknowledgement are acquired again by the same request.
func TestServeFetchAcknowledgesBeforeAcquiring(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 3)
	if res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1)); len(ranges(answerOf(res, f.tp(0)))) != 1 {
		t.Fatalf("first fetch acquired %v", ranges(answerOf(res, f.tp(0))))
	}
	req := f.fetchReq("m1", 1, 1)
	req.Partitions[0].Acks = []sharepartition.AckBatch{{FirstOffset: 0, LastOffset: 2, Types: []sharepartition.AckType{sharepartition.AckRelease}}}
	res := f.s.Fetch(context.Background(), req)
	a := answerOf(res, f.tp(0))
	if a == nil || a.AckErr != nil || !a.Acked {
		t.Fatalf("acknowledgement answer %+v", a)
	}
	if got := ranges(a); len(got) != 1 || got[0] != [3]int64{0, 2, 2} {
		t.Errorf("acquired %v after releasing, want 0-2 again at delivery 2", got)
	}
	if len(res.Acks) != 1 || res.Acks[0].Failed {
		t.Errorf("ack outcomes %+v, want the topic once, not failed", res.Acks)
	}
}

// §2.8 (long polling): nothing to acquire parks the request, counted as
// parked, until an append to a session partition wakes it.
func TestServeFetchParksUntilAppend(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	var parked atomic.Int64
	req := f.fetchReq("m1", 0, 1)
	req.MaxWait = time.Minute
	req.Parked = &parked
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(context.Background(), req) }()
	waitParked(t, &parked)
	f.produce(t, 0, 2)
	res := <-done
	if got := ranges(answerOf(res, f.tp(0))); len(got) != 1 || got[0] != [3]int64{0, 1, 1} {
		t.Errorf("woken fetch acquired %v, want 0-1", got)
	}
	if res.Expired || parked.Load() != 0 {
		t.Errorf("expired %v, still parked %d: the append, not the deadline, ended the wait", res.Expired, parked.Load())
	}
}

// §2.8 (long polling): at MaxWait on the broker clock the request answers
// with what it can acquire then (nothing), and counts as expired.
func TestServeFetchExpiresOnTheClock(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	var parked atomic.Int64
	req := f.fetchReq("m1", 0, 1)
	req.MaxWait = 500 * time.Millisecond
	req.Parked = &parked
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(context.Background(), req) }()
	waitParked(t, &parked)
	f.clock.Advance(req.MaxWait)
	res := <-done
	if !res.Expired || parked.Load() != 0 {
		t.Errorf("expired %v, parked %d; want expired and no longer parked", res.Expired, parked.Load())
	}
	if a := answerOf(res, f.tp(0)); a == nil || a.HasData() || a.Err != nil {
		t.Errorf("answer %+v, want the partition listed empty (a full answer)", a)
	}
}

// §2.8: ctx ends a parked request (the broker closing) without waiting
// for its deadline.
func TestServeFetchEndsWhenContextEnds(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	var parked atomic.Int64
	req := f.fetchReq("m1", 0, 1)
	req.MaxWait = time.Hour
	req.Parked = &parked
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(ctx, req) }()
	waitParked(t, &parked)
	cancel()
	if res := <-done; res.Expired {
		t.Error("a request ended by closing counted as expired")
	}
}

// §2.6 (a renew fetch only acknowledges): RENEW is applied, nothing is
// acquired, and the answer holds only the acknowledged partition.
func TestServeRenewOnlyFetch(t *testing.T) {
	f, _ := newServeFixture(t, 2, 10)
	f.produce(t, 0, 2)
	f.produce(t, 1, 2)
	req := f.fetchReq("m1", 0, 2)
	req.MaxRecords = 2 // only partition 0's records
	f.s.Fetch(context.Background(), req)
	renew := f.fetchReq("m1", 1, 2)
	renew.IsRenewAck = true
	renew.MaxRecords, renew.MaxBytes = 0, 0
	renew.Partitions[0].Acks = []sharepartition.AckBatch{{FirstOffset: 0, LastOffset: 1, Types: []sharepartition.AckType{sharepartition.AckRenew}}}
	res := f.s.Fetch(context.Background(), renew)
	if len(res.Partitions) != 1 || res.Partitions[0].TopicPartition != f.tp(0) {
		t.Fatalf("renew answer lists %+v, want partition 0 only", res.Partitions)
	}
	if a := res.Partitions[0].Answer; a.AckErr != nil || a.HasData() {
		t.Errorf("renew answer %+v, want the renewal applied and no records", a)
	}
	if res.Fetches != nil {
		t.Errorf("a renew fetch counted fetches %+v", res.Fetches)
	}
	if n := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(1)}).Share.Stats().InFlight; n != 0 {
		t.Errorf("partition 1 holds %d in-flight records; a renew fetch acquires nothing", n)
	}
}

// §2.4 (epoch -1) and row 8: a closing request applies its
// acknowledgements, answers them, then closes the session and releases
// the member's other records, which another member can then acquire.
func TestServeCloseReleases(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 4)
	f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1))
	closeReq := f.fetchReq("m1", -1, 1)
	closeReq.Partitions[0].Acks = accept(0, 1)
	res := f.s.Fetch(context.Background(), closeReq)
	if a := answerOf(res, f.tp(0)); a == nil || a.AckErr != nil || a.HasData() {
		t.Fatalf("closing answer %+v, want the acknowledgement only", a)
	}
	if err := f.s.Sessions.exists(closeReq.Key); !errors.Is(err, ErrShareSessionNotFound) {
		t.Errorf("session after closing: %v", err)
	}
	other := f.s.Fetch(context.Background(), f.fetchReq("m2", 0, 1))
	if got := ranges(answerOf(other, f.tp(0))); len(got) != 1 || got[0] != [3]int64{2, 3, 2} {
		t.Errorf("another member acquired %v, want the released 2-3 at delivery 2", got)
	}
}

// docs/cluster.md not-leader and share-ack-after-move: a partition the
// edge says another node leads answers the edge's error, nothing is
// acquired from it, its acknowledgements find no share state, and the
// request answers without waiting.
func TestServeRefusedLeaderAnswersItsError(t *testing.T) {
	f, edge := newServeFixture(t, 2, 10)
	f.produce(t, 0, 2)
	f.produce(t, 1, 2)
	edge.notLed[f.tp(1)] = true
	req := f.fetchReq("m1", 0, 2)
	req.MaxWait = time.Hour // would park without the refusal
	res := f.s.Fetch(context.Background(), req)
	if a := answerOf(res, f.tp(1)); a == nil || !errors.Is(a.Err, errFakeNotLeader) || a.HasData() {
		t.Errorf("refused partition answers %+v, want the edge's error and no records", a)
	}
	if got := ranges(answerOf(res, f.tp(0))); len(got) != 1 {
		t.Errorf("led partition acquired %v, want its records", got)
	}
	if f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(1)}) != nil {
		t.Error("share state was made for a partition another node leads")
	}
	if len(res.Fetches) != 1 || !res.Fetches[0].Failed {
		t.Errorf("fetch outcomes %+v, want the topic counted as failed", res.Fetches)
	}
	ack := f.fetchReq("m1", 1, 0)
	ack.Partitions = []PartitionAcks{{TopicPartition: f.tp(1), Acks: accept(0, 1)}}
	res = f.s.Fetch(context.Background(), ack)
	if a := answerOf(res, f.tp(1)); a == nil || !errors.Is(a.AckErr, storage.ErrUnknownTopic) {
		t.Errorf("acknowledging a refused partition: %+v, want UNKNOWN_TOPIC_OR_PARTITION", a)
	}
}

// §2.3 step 6 (READ on each topic): a topic the requester may not read
// answers the edge's error and is not acquired from; the edge is asked
// once per topic.
func TestServeFetchRefusesUnreadableTopic(t *testing.T) {
	f, edge := newServeFixture(t, 2, 10)
	f.produce(t, 0, 2)
	edge.unread[f.topic.ID] = true
	res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 2))
	for p := range int32(2) {
		if a := answerOf(res, f.tp(p)); a == nil || !errors.Is(a.Err, errFakeNoRead) || a.HasData() {
			t.Errorf("partition %d answers %+v, want the edge's refusal", p, a)
		}
	}
	if edge.readAsks != 1 {
		t.Errorf("the edge was asked %d times about one topic", edge.readAsks)
	}
}

// §2.4 (epoch 0 beyond group.share.max.share.sessions): the request waits
// MaxWait on the broker clock, then answers the limit.
func TestServeSessionLimitWaitsMaxWait(t *testing.T) {
	f, _ := newServeFixture(t, 1, 1)
	if res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1)); res.Err != nil {
		t.Fatal(res.Err)
	}
	req := f.fetchReq("m2", 0, 1)
	req.MaxWait = time.Second
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(context.Background(), req) }()
	for f.clock.Pending() == 0 { // the wait's timer, armed on the clock
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("answered before MaxWait passed on the clock")
	default:
	}
	f.clock.Advance(time.Second)
	if res := <-done; !errors.Is(res.Err, ErrShareSessionLimit) || res.Partitions != nil {
		t.Errorf("second session: %+v, want the limit alone", res)
	}
}

// §3.2 (ShareAcknowledge): epoch 0 is invalid; otherwise each partition's
// batches are applied and the session's epoch moves on; -1 then closes
// the session and releases the member's records.
func TestServeAcknowledge(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 4)
	f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1))
	key := SessionKey{Group: "g", Member: "m1"}
	req := AckRequest{Key: key, Epoch: 0, Version: 2,
		Topics: []AckTopic{{TopicID: f.topic.ID, Partitions: []AckPartition{{Partition: 0, Acks: accept(0, 1)}}}}}
	if res := f.s.Acknowledge(req); !errors.Is(res.Err, ErrInvalidShareSessionEpoch) {
		t.Fatalf("epoch 0: %v", res.Err)
	}
	req.Epoch = 1
	res := f.s.Acknowledge(req)
	if res.Err != nil || len(res.Errs) != 1 || res.Errs[0] != nil {
		t.Fatalf("acknowledging: %+v", res)
	}
	if res.LockDuration != lockDuration || len(res.Acks) != 1 || res.Acks[0].Failed {
		t.Errorf("result %+v, want the lock duration and the topic counted once", res)
	}
	req.Epoch = -1
	req.Topics[0].Partitions[0].Acks = accept(0, 1) // already accepted, and SPSO has passed them
	if res := f.s.Acknowledge(req); res.Err != nil || res.Errs[0] != nil || len(res.Acks) != 1 || res.Acks[0].Failed {
		t.Errorf("acknowledging below SPSO: %+v, want success, counted (share-groups.md §1.2, ack-below-spso)", res)
	}
	if err := f.s.Sessions.exists(key); err == nil {
		t.Error("epoch -1 left the session open")
	}
	other := f.s.Fetch(context.Background(), f.fetchReq("m2", 0, 1))
	if got := ranges(answerOf(other, f.tp(0))); len(got) != 1 || got[0] != [3]int64{2, 3, 2} {
		t.Errorf("another member acquired %v, want the released 2-3", got)
	}
}

// §2.3 step 6 (READ on each topic), as ShareAcknowledge: acknowledgements
// a ShareFetch carries for a topic the requester may not read answer the
// edge's error, are not applied and are not counted; the records stay
// with their member, who can acknowledge them once READ is back.
func TestServeFetchRefusesAcksOnUnreadableTopic(t *testing.T) {
	f, edge := newServeFixture(t, 1, 10)
	f.produce(t, 0, 3)
	if res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1)); len(ranges(answerOf(res, f.tp(0)))) != 1 {
		t.Fatalf("first fetch acquired %v", ranges(answerOf(res, f.tp(0))))
	}
	edge.unread[f.topic.ID] = true
	req := f.fetchReq("m1", 1, 1)
	req.Partitions[0].Acks = accept(0, 2)
	res := f.s.Fetch(context.Background(), req)
	if a := answerOf(res, f.tp(0)); a == nil || !a.Acked || !errors.Is(a.AckErr, errFakeNoRead) {
		t.Fatalf("acknowledgement answer %+v, want the edge's refusal", a)
	}
	if len(res.Acks) != 0 {
		t.Errorf("ack outcomes %+v, want none counted", res.Acks)
	}
	edge.unread[f.topic.ID] = false
	ack := f.s.Acknowledge(AckRequest{Key: SessionKey{Group: "g", Member: "m1"}, Epoch: 2, Version: 2,
		Topics: []AckTopic{{TopicID: f.topic.ID, Partitions: []AckPartition{{Partition: 0, Acks: accept(0, 2)}}}}})
	if ack.Err != nil || len(ack.Errs) != 1 || ack.Errs[0] != nil {
		t.Fatalf("accepting after READ is back: %+v, want the records still m1's to accept", ack)
	}
}

// soleLeaderEdge is fakeEdge on a node that says it leads everything, and
// counts the Leads asks.
type soleLeaderEdge struct {
	fakeEdge
	asks atomic.Int64
}

func (e *soleLeaderEdge) Leads(node int32, tp TopicPartition) error {
	e.asks.Add(1)
	return e.fakeEdge.Leads(node, tp)
}

func (e *soleLeaderEdge) LeadsAll(int32) bool { return true }

// share-fetch-ready-set: on a node that leads every partition, an
// incremental ShareFetch asks Leads only for the partitions it looks at,
// not for every partition of its session.
func TestServeSoleLeaderAsksOnlyWhatItLooksAt(t *testing.T) {
	const n = 64
	f, _ := newServeFixture(t, n, 10)
	edge := &soleLeaderEdge{fakeEdge: fakeEdge{notLed: map[TopicPartition]bool{}, unread: map[storage.TopicID]bool{}}}
	f.s.edge = edge
	if res := f.s.Fetch(context.Background(), f.fetchReq("m1", 0, n)); res.Err != nil {
		t.Fatal(res.Err)
	}
	f.produce(t, 7, 3)
	edge.asks.Store(0)
	req := f.fetchReq("m1", 1, 0)
	res := f.s.Fetch(context.Background(), req)
	if got := ranges(answerOf(res, f.tp(7))); len(got) != 1 || got[0] != [3]int64{0, 2, 1} {
		t.Fatalf("partition 7 acquired %v, want 0-2 at delivery 1", got)
	}
	if asks := edge.asks.Load(); asks > 2 {
		t.Errorf("Leads asked %d times for a session of %d partitions with one ready; want at most 2", asks, n)
	}
}
