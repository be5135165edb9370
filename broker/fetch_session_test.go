package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/fetchsession"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Fetch sessions (KIP-227) over a raw connection: the rules
// fetch-session-epochs, fetch-session-incremental, fetch-session-cache-slots,
// fetch-session-eviction and fetch-session-survives (docs/log.md). On a
// broker without sessions every one of these fails at its first check: the
// full fetch answers session 0, and every later epoch
// FETCH_SESSION_ID_NOT_FOUND.

// sessionEnv is a broker on a manual clock with topic "fs" of four
// partitions, a raw connection and a producer.
type sessionEnv struct {
	t       *testing.T
	b       *broker.Broker
	clock   *locktimer.ManualClock
	c       *rawConn
	cl      *kgo.Client
	topicID [16]byte
}

func newSessionEnv(t *testing.T, cfg broker.Config) *sessionEnv {
	t.Helper()
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg.Clock = clock
	b, addr := startBroker(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("fs"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c := dialRaw(t, addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7) // topic IDs in the answer
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "fs", 4, 1
	create.TimeoutMillis = 10_000
	create.Topics = append(create.Topics, ct)
	cresp := c.request(create).(*kmsg.CreateTopicsResponse)
	wantCode(t, "create topic", cresp.Topics[0].ErrorCode, nil)
	return &sessionEnv{t: t, b: b, clock: clock, c: c, cl: cl, topicID: cresp.Topics[0].TopicID}
}

// produce appends one record to partition p.
func (e *sessionEnv) produce(p int32) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// fetch sends a Fetch at version v with the session fields given, listing
// the partitions of "fs" in from at their offsets and forgetting those in
// forget. It never waits: MaxWaitMs 0.
func (e *sessionEnv) fetch(v int16, id, epoch int32, from map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	e.t.Helper()
	return e.fetchOn(e.c, v, id, epoch, from, forget...)
}

func (e *sessionEnv) fetchOn(c *rawConn, v int16, id, epoch int32, from map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	e.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 50<<20, 0
	req.SessionID, req.SessionEpoch = id, epoch
	if len(from) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "fs", e.topicID
		for _, p := range slices.Sorted(mapKeys(from)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p, from[p]
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = "fs", e.topicID, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return c.request(req).(*kmsg.FetchResponse)
}

func mapKeys(m map[int32]int64) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// answered is the partitions an answer lists, with their error codes and
// whether they carry records, checked to be of topic "fs".
type answeredPart struct {
	code    int16
	records bool
	hw      int64
}

func answered(t *testing.T, resp *kmsg.FetchResponse) map[int32]answeredPart {
	t.Helper()
	wantCode(t, "fetch", resp.ErrorCode, nil)
	out := make(map[int32]answeredPart)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if _, dup := out[p.Partition]; dup {
				t.Fatalf("partition %d answered twice", p.Partition)
			}
			out[p.Partition] = answeredPart{code: p.ErrorCode, records: len(p.RecordBatches) > 0, hw: p.HighWatermark}
		}
	}
	return out
}

func wantParts(t *testing.T, what string, got map[int32]answeredPart, want ...int32) {
	t.Helper()
	var have []int32
	for p := range got {
		have = append(have, p)
	}
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Fatalf("%s: answered partitions %v, want %v", what, have, want)
	}
}

// TestFetchSessionIncremental checks fetch-session-epochs and
// fetch-session-incremental with names (v12) and topic IDs (v13, v17): a
// full fetch at epoch 0 creates a session and lists every partition; an
// incremental fetch then lists only partitions with records or a new high
// watermark; a partition listed again updates its offset; a forgotten one
// is no longer read.
func TestFetchSessionIncremental(t *testing.T) {
	for _, v := range []int16{7, 12, 13, 17} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			e := newSessionEnv(t, broker.Config{})
			e.produce(0)
			full := e.fetch(v, 0, fetchsession.InitialEpoch, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0})
			if full.SessionID == 0 {
				t.Fatal("full fetch at epoch 0 created no session (SessionID 0)")
			}
			id := full.SessionID
			got := answered(t, full)
			wantParts(t, "full fetch", got, 0, 1, 2, 3)
			if !got[0].records {
				t.Fatal("full fetch: partition 0 without its record")
			}
			// Partition 0 at its new offset, nothing new anywhere: an empty
			// answer, still naming the session.
			resp := e.fetch(v, id, 1, map[int32]int64{0: 1})
			if resp.SessionID != id {
				t.Fatalf("incremental answer names session %d, want %d", resp.SessionID, id)
			}
			wantParts(t, "nothing new", answered(t, resp))
			// A record on partition 2: only it, with the record.
			e.produce(2)
			got = answered(t, e.fetch(v, id, 2, nil))
			wantParts(t, "record on p2", got, 2)
			if !got[2].records || got[2].hw != 1 {
				t.Fatalf("p2 answered %+v, want its record and high watermark 1", got[2])
			}
			// Not listed again, p2 is still read from offset 0: Kafka
			// answers it with the record again.
			wantParts(t, "p2 offset unchanged", answered(t, e.fetch(v, id, 3, nil)), 2)
			wantParts(t, "p2 caught up", answered(t, e.fetch(v, id, 4, map[int32]int64{2: 1})))
			// Forget p3: a record there is not answered.
			wantParts(t, "forget p3", answered(t, e.fetch(v, id, 5, nil, 3)))
			e.produce(3)
			wantParts(t, "record on forgotten p3", answered(t, e.fetch(v, id, 6, nil)))
			// Listing p3 again adds it back, answered (its high watermark
			// is new to the session).
			got = answered(t, e.fetch(v, id, 7, map[int32]int64{3: 0}))
			wantParts(t, "p3 added back", got, 3)
		})
	}
}

// TestFetchSessionEpochErrors checks fetch-session-epochs' errors: a
// skipped or repeated epoch is INVALID_FETCH_SESSION_EPOCH, an unknown ID
// FETCH_SESSION_ID_NOT_FOUND, names on a session of topic IDs
// FETCH_SESSION_TOPIC_ID_ERROR, each with no partitions and session 0; the
// final epoch -1 fetches without a session and closes the one named.
func TestFetchSessionEpochErrors(t *testing.T) {
	e := newSessionEnv(t, broker.Config{})
	id := e.fetch(13, 0, 0, map[int32]int64{0: 0}).SessionID
	if id == 0 {
		t.Fatal("no session created")
	}
	failed := func(what string, resp *kmsg.FetchResponse, want *kerr.Error) {
		t.Helper()
		wantCode(t, what, resp.ErrorCode, want)
		if resp.SessionID != 0 || len(resp.Topics) != 0 {
			t.Fatalf("%s: session %d, %d topics; want 0 and none", what, resp.SessionID, len(resp.Topics))
		}
	}
	failed("epoch 2 before 1", e.fetch(13, id, 2, nil), kerr.InvalidFetchSessionEpoch)
	if resp := e.fetch(13, id, 1, nil); resp.ErrorCode != 0 {
		t.Fatalf("epoch 1: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	failed("epoch 1 again", e.fetch(13, id, 1, nil), kerr.InvalidFetchSessionEpoch)
	failed("unknown session", e.fetch(13, id+1, 1, nil), kerr.FetchSessionIDNotFound)
	failed("names on an ID session", e.fetch(12, id, 2, nil), kerr.FetchSessionTopicIDError)
	// The failures moved nothing: epoch 2 still continues it.
	if resp := e.fetch(13, id, 2, nil); resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("epoch 2 after the failures: %v, session %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
	}
	final := e.fetch(13, id, fetchsession.FinalEpoch, map[int32]int64{0: 0})
	if final.SessionID != 0 || len(answered(t, final)) != 1 {
		t.Fatalf("final epoch: session %d, want 0 and the partition", final.SessionID)
	}
	failed("closed session", e.fetch(13, id, 3, nil), kerr.FetchSessionIDNotFound)
	// Before v7 there is no session to make.
	if resp := e.fetch(6, 0, 0, map[int32]int64{0: 0}); resp.SessionID != 0 {
		t.Fatalf("v6 answer names session %d", resp.SessionID)
	}
}

// TestFetchSessionCacheSlots checks fetch-session-cache-slots and
// fetch-session-eviction with max.incremental.fetch.session.cache.slots=1:
// a second client's full fetch gets no session while the first is in use,
// gets one once the first was unused for more than two minutes (the first
// then answers FETCH_SESSION_ID_NOT_FOUND), and 0 slots make none.
func TestFetchSessionCacheSlots(t *testing.T) {
	e := newSessionEnv(t, broker.Config{Props: map[string]string{"max.incremental.fetch.session.cache.slots": "1"}})
	first := e.fetch(13, 0, 0, map[int32]int64{0: 0}).SessionID
	other := dialRaw(t, e.b.Addr().String())
	all := map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}
	if id := e.fetchOn(other, 13, 0, 0, all).SessionID; first == 0 || id != 0 {
		t.Fatalf("sessions %d then %d; want one, then none (one slot, not stale, not older than two minutes)", first, id)
	}
	e.clock.Advance(fetchsession.EvictionAge + time.Second)
	second := e.fetchOn(other, 13, 0, 0, all).SessionID
	if second == 0 {
		t.Fatal("no session though the only one was unused for over two minutes")
	}
	wantCode(t, "evicted session", e.fetch(13, first, 1, nil).ErrorCode, kerr.FetchSessionIDNotFound)
	if st := broker.FetchSessionStats(e.b); st.Sessions != 1 || st.Partitions != 4 || st.Evictions != 1 {
		t.Fatalf("cache %+v, want 1 session of 4 partitions, 1 eviction", st)
	}

	none := newSessionEnv(t, broker.Config{Props: map[string]string{"max.incremental.fetch.session.cache.slots": "0"}})
	if id := none.fetch(13, 0, 0, all).SessionID; id != 0 {
		t.Fatalf("0 slots made session %d", id)
	}
}

// TestFetchSessionSurvives checks fetch-session-survives: a session
// outlives its topic's deletion, answering its partitions UNKNOWN_TOPIC_ID
// on every fetch until they are forgotten, as Kafka's incremental context
// does with a topic ID it cannot resolve.
func TestFetchSessionSurvives(t *testing.T) {
	e := newSessionEnv(t, broker.Config{})
	id := e.fetch(13, 0, 0, map[int32]int64{0: 0, 1: 0}).SessionID
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = e.topicID
	del.Topics = append(del.Topics, dt)
	del.TimeoutMillis = 10_000
	wantCode(t, "delete topic", e.c.request(del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, nil)
	for epoch := int32(1); epoch <= 2; epoch++ {
		resp := e.fetch(13, id, epoch, nil)
		if resp.SessionID != id {
			t.Fatalf("epoch %d after delete: session %d, want %d", epoch, resp.SessionID, id)
		}
		got := answered(t, resp)
		wantParts(t, "deleted topic", got, 0, 1)
		for p, a := range got {
			if a.code != kerr.UnknownTopicID.Code {
				t.Fatalf("p%d: %v, want UNKNOWN_TOPIC_ID", p, kerr.ErrorForCode(a.code))
			}
		}
	}
	if resp := e.fetch(13, id, 3, nil, 0, 1); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("forgetting both: %v, %d topics", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	wantCode(t, "session emptied", e.fetch(13, id, 4, nil).ErrorCode, kerr.FetchSessionIDNotFound)
}

// TestFetchSessionLeaderMove checks fetch-session-survives across a leader
// move: the session stays, the moved partition is answered
// NOT_LEADER_OR_FOLLOWER by a v10 fetch (before v11 only the leader
// serves), the others not at all; and a session belongs to the node that
// made it, so another node answers its ID FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionLeaderMove(t *testing.T) {
	e := newSessionEnv(t, broker.Config{Nodes: 2})
	for p := int32(0); p < 4; p++ {
		if _, err := e.b.MoveLeader("fs", p, 0); err != nil {
			t.Fatal(err)
		}
	}
	id := e.fetch(10, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}).SessionID
	if id == 0 {
		t.Fatal("no session created")
	}
	if _, err := e.b.MoveLeader("fs", 1, 1); err != nil {
		t.Fatal(err)
	}
	resp := e.fetch(10, id, 1, nil)
	if resp.SessionID != id {
		t.Fatalf("after the move: session %d, want %d", resp.SessionID, id)
	}
	got := answered(t, resp)
	wantParts(t, "after the move", got, 1)
	if got[1].code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("moved partition: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got[1].code))
	}
	addrs := broker.NodeListenerAddrs(e.b, "PLAINTEXT")
	if len(addrs) != 2 {
		t.Fatalf("listeners %v, want one per node", addrs)
	}
	other := dialRaw(t, addrs[1])
	wantCode(t, "another node", e.fetchOn(other, 10, id, 2, nil).ErrorCode, kerr.FetchSessionIDNotFound)
	// Moved back, the partition's error is gone: answered once more.
	if _, err := e.b.MoveLeader("fs", 1, 0); err != nil {
		t.Fatal(err)
	}
	got = answered(t, e.fetch(10, id, 2, nil))
	wantParts(t, "moved back", got, 1)
	if got[1].code != 0 {
		t.Fatalf("moved back: %v", kerr.ErrorForCode(got[1].code))
	}
	wantParts(t, "settled", answered(t, e.fetch(10, id, 3, nil)))
}
