package shareserve

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// These tests drive the service with storage, sharepartition and a manual
// clock: no sockets and no kmsg.

const lockDuration = 30 * time.Second

// fixture is a service over a store with topic "t", its partitions filled
// by produce, on a manual clock; configReads counts GroupConfig calls.
type fixture struct {
	s           *Service
	clock       *locktimer.ManualClock
	topic       *storage.Topic
	configReads int
}

func newFixture(t *testing.T, partitions int32) *fixture {
	t.Helper()
	store := storage.NewStore()
	topic, err := store.CreateTopic("t", partitions, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)), topic: topic}
	f.s = New(Options{
		Store:       store,
		Clock:       f.clock,
		MaxSessions: 10,
		GroupConfig: func(string) group.ShareGroupConfig {
			f.configReads++
			return testGroupConfig()
		},
	})
	t.Cleanup(f.s.Close)
	return f
}

func testGroupConfig() group.ShareGroupConfig {
	return group.ShareGroupConfig{
		AutoOffsetReset:         group.OffsetReset{Kind: group.ResetEarliest},
		RecordLockDuration:      lockDuration,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		RenewAcknowledgeEnable:  true,
	}
}

// produce appends one batch of n plain records to partition p.
func (f *fixture) produce(t *testing.T, p int32, n int) {
	t.Helper()
	if _, err := f.topic.Partition(p).Append(batchtest.Plain(n).Build(), storage.AppendOptions{NowMs: f.clock.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) tp(p int32) TopicPartition {
	return TopicPartition{TopicID: f.topic.ID, Partition: p}
}

// open opens member's session on partitions 0..n-1.
func (f *fixture) open(t *testing.T, member string, n int32) (SessionKey, []SessionPartition) {
	t.Helper()
	key := SessionKey{Group: "g", Member: member}
	var tps []TopicPartition
	for p := range n {
		tps = append(tps, f.tp(p))
	}
	parts, err := f.s.Sessions.open(key, member, tps)
	if err != nil {
		t.Fatal(err)
	}
	return key, parts
}

var wide = Limits{MaxRecords: 500, MaxBytes: 1 << 20, Mode: sharepartition.BatchOptimized}

// fetchOnce makes one ShareFetch of key's member over parts: one attempt,
// no acknowledgements.
func (f *fixture) fetchOnce(key SessionKey, parts []SessionPartition, epoch int32, lim Limits) *fetchWork {
	fetch := f.s.newFetch(key, testGroupConfig())
	if fetch.plan(parts, epoch, lim) {
		attempt(fetch, make(chan struct{}, 1))
		fetch.unpark()
	}
	return fetch
}

// accept acknowledges first..last as ACCEPT.
func accept(first, last int64) []sharepartition.AckBatch {
	return []sharepartition.AckBatch{{FirstOffset: first, LastOffset: last, Types: []sharepartition.AckType{sharepartition.AckAccept}}}
}

// attempt runs one long-poll attempt of f and unwatches.
func attempt(fetch *fetchWork, wake chan<- struct{}) bool {
	done, unwatch := fetch.attempt(wake)
	unwatch()
	return done
}

// ranges renders a partition's acquired ranges as first-last/count.
func ranges(a *Answer) [][3]int64 {
	if a == nil {
		return nil
	}
	var out [][3]int64
	for _, r := range a.Ranges {
		out = append(out, [3]int64{r.FirstOffset, r.LastOffset, int64(r.DeliveryCount)})
	}
	return out
}

// share-groups.md §2.7: the answer carries the stored batches themselves,
// not a copy, so the broker can write them out as they are.
func TestFetchAnswersWithStoredBytes(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(t, 0, 3)
	f.produce(t, 0, 2)
	key, parts := f.open(t, "m1", 1)
	fetch := f.s.newFetch(key, testGroupConfig())
	if !fetch.plan(parts, 0, wide) {
		t.Fatal("Plan found nothing to acquire for")
	}
	if !attempt(fetch, make(chan struct{}, 1)) {
		t.Fatal("attempt not done with records in the log")
	}
	a := fetch.Answer(f.tp(0))
	if got := ranges(a); !slices.Equal(got, [][3]int64{{0, 4, 1}}) {
		t.Fatalf("acquired %v, want 0-4 at delivery 1", got)
	}
	stored := f.topic.Partition(0).ReadRangeInto(0, 4, nil)
	if len(a.Records) != len(stored) || &a.Records[0][0] != &stored[0][0] || a.Records.Len() != stored.Len() {
		t.Fatal("the answer's records are not the log's own bytes")
	}
}

// share-groups.md §2.7: MaxRecords is spent across partitions in an order
// that starts at the partition the epoch rotates to.
func TestFetchRotatesWithEpoch(t *testing.T) {
	f := newFixture(t, 2)
	f.produce(t, 0, 1)
	f.produce(t, 0, 1)
	f.produce(t, 1, 1)
	f.produce(t, 1, 1)
	key, parts := f.open(t, "m1", 2)
	fetch := f.fetchOnce(key, parts, 1, Limits{MaxRecords: 1, MaxBytes: 1 << 20, Mode: sharepartition.RecordLimit})
	if got := ranges(fetch.Answer(f.tp(1))); !slices.Equal(got, [][3]int64{{0, 0, 1}}) {
		t.Fatalf("partition 1 acquired %v, want 0-0 first at epoch 1", got)
	}
	if a := fetch.Answer(f.tp(0)); a.HasData() {
		t.Fatalf("partition 0 acquired %v after MaxRecords was spent", ranges(a))
	}
}

// Long polls: an attempt that finds nothing registers its wake channel
// with the log and the share partition, so an append or a lock expiry
// wakes it; the share partition's state exists from the first attempt.
func TestFetchWakesOnAppendAndExpiry(t *testing.T) {
	f := newFixture(t, 1)
	key, parts := f.open(t, "m1", 1)
	wake := make(chan struct{}, 1)

	fetch := f.s.newFetch(key, testGroupConfig())
	fetch.plan(parts, 0, wide)
	done, unwatch := fetch.attempt(wake)
	if done {
		t.Fatal("done with an empty log")
	}
	f.produce(t, 0, 2)
	select {
	case <-wake:
	default:
		t.Fatal("an append did not wake the attempt")
	}
	unwatch()
	if !attempt(fetch, wake) || !fetch.Answer(f.tp(0)).HasData() {
		t.Fatal("the attempt after the wake acquired nothing")
	}

	// m2 waits on records m1 holds; their lock expiring wakes it.
	key2, parts2 := f.open(t, "m2", 1)
	fetch2 := f.s.newFetch(key2, testGroupConfig())
	fetch2.plan(parts2, 0, wide)
	wake2 := make(chan struct{}, 1)
	done, unwatch = fetch2.attempt(wake2)
	if done {
		t.Fatal("m2 acquired records m1 holds")
	}
	f.clock.Advance(lockDuration)
	select {
	case <-wake2:
	default:
		t.Fatal("a lock expiry did not wake the attempt")
	}
	unwatch()
	attempt(fetch2, wake2)
	if got := ranges(fetch2.Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 1, 2}}) {
		t.Fatalf("m2 acquired %v, want 0-1 at delivery 2", got)
	}
}

// The group's config is read when a share partition is made, not per
// partition per pass: the request's copy serves every attempt.
func TestFetchReadsGroupConfigOnlyToCreate(t *testing.T) {
	f := newFixture(t, 2)
	key, parts := f.open(t, "m1", 2)
	fetch := f.s.newFetch(key, testGroupConfig())
	fetch.plan(parts, 0, wide)
	for range 3 {
		attempt(fetch, make(chan struct{}, 1))
	}
	if f.configReads != 2 {
		t.Fatalf("GroupConfig read %d times for 2 partitions over 3 attempts", f.configReads)
	}
}

// share-groups.md §2.5: checks in Kafka's order (topic ID, request rules,
// partition, share state), and an acknowledgement never creates state.
func TestAcknowledgeOrderAndNoState(t *testing.T) {
	f := newFixture(t, 1)
	key, _ := f.open(t, "m1", 1)
	now := f.clock.Now()
	bad := accept(5, 4)
	good := accept(0, 0)
	for _, tc := range []struct {
		name    string
		tp      TopicPartition
		batches []sharepartition.AckBatch
		want    error
	}{
		{"unknown topic ID before the rules", TopicPartition{TopicID: storage.TopicID{9}}, bad, storage.ErrUnknownTopicID},
		{"rules before the partition", f.tp(7), bad, ErrInvalidRequest},
		{"unknown partition", f.tp(7), good, storage.ErrUnknownTopic},
		{"no share state", f.tp(0), good, storage.ErrUnknownTopic},
		{"nothing to acknowledge", f.tp(7), nil, nil},
	} {
		if err := f.s.acknowledgePartition(key, tc.tp, 1, false, tc.batches, now); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}) != nil {
		t.Fatal("an acknowledgement created share state")
	}
}

// share-groups.md §2.4: an incremental answer lists only partitions with
// something to say or marked to appear, and what it listed loses its mark;
// acknowledged partitions always appear.
func TestListedIncremental(t *testing.T) {
	f := newFixture(t, 3)
	f.produce(t, 1, 1)
	key, parts := f.open(t, "m1", 3)
	if got := f.fetchOnce(key, parts, 0, wide).listed(0, parts); len(got) != 3 {
		t.Fatalf("a full answer listed %v", got)
	}

	parts, err := f.s.Sessions.advance(key, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fetch := f.s.newFetch(key, testGroupConfig())
	f.produce(t, 2, 1)
	fetch.acknowledge(f.tp(1), 1, false, accept(0, 0), f.clock.Now())
	fetch.plan(parts, 1, wide)
	attempt(fetch, make(chan struct{}, 1))
	got := fetch.listed(1, parts)
	if want := []TopicPartition{f.tp(1), f.tp(2)}; !slices.Equal(got, want) {
		t.Fatalf("incremental answer listed %v, want %v", got, want)
	}
	if a := fetch.Answer(f.tp(1)); a.AckErr != nil {
		t.Fatalf("acknowledgement failed: %v", a.AckErr)
	}
}

// Row 8: closing a session, or the connection that opened it, releases
// what its member holds at once.
func TestClosingReleases(t *testing.T) {
	for name, end := range map[string]func(f *fixture, key SessionKey){
		"session closed":    func(f *fixture, key SessionKey) { f.s.closeSession(key, f.clock.Now()) },
		"connection closed": func(f *fixture, key SessionKey) { f.s.OwnerClosed(key.Member, f.clock.Now()) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, 1)
			f.produce(t, 0, 2)
			key, parts := f.open(t, "m1", 1)
			f.fetchOnce(key, parts, 0, wide)
			end(f, key)
			if f.s.Sessions.exists(key) == nil {
				t.Fatal("the session survived")
			}
			snap := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}).Share.Snapshot()
			if snap.NextFetchOffset != 0 {
				t.Fatalf("records not released: next fetch offset %d", snap.NextFetchOffset)
			}
		})
	}
}

// share-groups.md §5.1: lag is what is still to be delivered.
func TestLag(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(t, 0, 4)
	key, parts := f.open(t, "m1", 1)
	f.fetchOnce(key, parts, 0, Limits{MaxRecords: 2, MaxBytes: 1 << 20, Mode: sharepartition.RecordLimit})
	if err := f.s.acknowledgePartition(key, f.tp(0), 1, false, accept(0, 0), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	spso, lag := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}).Lag()
	if spso != 1 || lag != 3 {
		t.Fatalf("SPSO %d lag %d, want 1 and 3", spso, lag)
	}
}
