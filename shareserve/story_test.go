package shareserve

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// storyFixture is a service writing dead letters to dlq.t (auto-created),
// with record stories on.
func storyFixture(t *testing.T) *fixture {
	t.Helper()
	store := storage.NewStore()
	topic, err := store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testGroupConfig()
	cfg.DeadLetter = group.DeadLetterConfig{Topic: "dlq.t"}
	f := &fixture{clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)), topic: topic}
	f.s = New(Options{
		Store: store, Clock: f.clock, MaxSessions: 10,
		GroupConfig: func(string) group.ShareGroupConfig { return cfg },
		DeadLetters: &DeadLetterOptions{Prefix: "dlq.", AutoCreate: true, Partitions: 1,
			AppendOptions: func(*storage.Topic) storage.AppendOptions { return storage.AppendOptions{} },
			Log:           slog.New(slog.DiscardHandler)},
		StoryEvents: 4096,
	})
	t.Cleanup(f.s.Close)
	return f
}

func storyKinds(st sharepartition.Story) []sharepartition.StoryKind {
	var out []sharepartition.StoryKind
	for _, e := range st.Events {
		out = append(out, e.Kind)
	}
	return out
}

// record-story: a record acquired, expired, redelivered and rejected into
// the dead-letter queue tells exactly those events in order, and the
// dead-letter event names the offset the dead-letter writer appended it at
// — where the record with that offset's context headers is.
func TestStoryOfRejectedIntoDeadLetterQueue(t *testing.T) {
	f := storyFixture(t)
	f.produce(t, 0, 4)
	key, parts := f.open(t, "m1", 1)
	if got := ranges(f.fetchOnce(key, parts, 0, wide).Answer(f.tp(0))); len(got) != 1 {
		t.Fatalf("acquired %v", got)
	}
	f.clock.Advance(lockDuration) // the lock expires
	if got := ranges(f.fetchOnce(key, parts, 1, wide).Answer(f.tp(0))); len(got) != 1 || got[0][2] != 2 {
		t.Fatalf("redelivered %v", got)
	}
	reject := []sharepartition.AckBatch{{FirstOffset: 1, LastOffset: 2, Types: []sharepartition.AckType{sharepartition.AckReject}}}
	if err := f.s.acknowledgePartition(key, f.tp(0), 1, false, reject, f.clock.Now()); err != nil {
		t.Fatal(err)
	}

	st := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}).Share.Story(2)
	want := []sharepartition.StoryKind{sharepartition.StoryAcquired, sharepartition.StoryLockExpired,
		sharepartition.StoryAcquired, sharepartition.StoryAcknowledged, sharepartition.StoryArchived,
		sharepartition.StoryDeadLettered}
	if got := storyKinds(st); !slices.Equal(got, want) {
		t.Fatalf("story of 2: %v; want %v", got, want)
	}
	ev := st.Events
	if ev[0].DeliveryCount != 1 || ev[2].DeliveryCount != 2 || ev[0].Member != "m1" || ev[1].Member != "m1" ||
		ev[3].AckType != sharepartition.AckReject || ev[4].Reason != sharepartition.ReasonRejected {
		t.Fatalf("story of 2: %+v", ev)
	}
	dl := ev[5]
	if dl.DLQTopic != "dlq.t" || dl.DLQPartition != 0 {
		t.Fatalf("dead-lettered to %s/%d", dl.DLQTopic, dl.DLQPartition)
	}
	dlq := f.s.store.Topic("dlq.t").Partition(0)
	recs, err := dlq.RecordsIn(dl.DLQOffsetOf(2), dl.DLQOffsetOf(2))
	if err != nil || len(recs) != 1 {
		t.Fatalf("dead-letter record at %d: %v %v", dl.DLQOffsetOf(2), recs, err)
	}
	for _, h := range recs[0].Headers {
		if h.Key == dlqHeaderOffset && string(h.Value) != strconv.Itoa(2) {
			t.Fatalf("the dead letter at %d is of offset %s, not 2", dl.DLQOffsetOf(2), h.Value)
		}
	}
}

// record-story: a member's records let go because its connection closed
// tell session_closed with the reason connection_closed; a session the
// client closes tells session_closed.
func TestStoryTellsWhySessionClosed(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.s.storyEvents = 4096 // before the share partition is made
	f.produce(t, 0, 2)
	f.produce(t, 0, 2)
	f.s.Fetch(context.Background(), f.fetchReq("m1", 0, 1)) // 0-1
	f.s.OwnerClosed("m1", f.clock.Now())
	f.s.Fetch(context.Background(), f.fetchReq("m2", 0, 4)) // 0-3
	f.s.Fetch(context.Background(), f.fetchReq("m2", -1, 1))
	sp := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}).Share
	var reasons []sharepartition.StoryReason
	for _, e := range sp.Story(0).Events {
		if e.Kind == sharepartition.StorySessionClosed {
			reasons = append(reasons, e.Reason)
		}
	}
	want := []sharepartition.StoryReason{sharepartition.ReasonConnectionClosed, sharepartition.ReasonSessionClosed}
	if !slices.Equal(reasons, want) {
		t.Fatalf("session_closed reasons %v; want %v", reasons, want)
	}
}
