package shareserve

import (
	"reflect"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

type deadCall struct {
	key  Key
	cfg  group.DeadLetterConfig
	dead []sharepartition.DeadLetter
}

// share-groups.md §10 dlq-gate, dlq-which: a share partition carries the
// dead-letter hook only while its group names a dead-letter topic; a group
// config change installs or removes it; the hook hears REJECTs with the
// partition's key and the group's config.
func TestDeadLetterHookFollowsGroupConfig(t *testing.T) {
	store := storage.NewStore()
	topic, err := store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testGroupConfig()
	var calls []deadCall
	f := &fixture{clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)), topic: topic}
	f.s = New(Options{
		Store: store, Clock: f.clock, MaxSessions: 10,
		GroupConfig: func(string) group.ShareGroupConfig { return cfg },
		onDeadLetter: func(k Key, c group.DeadLetterConfig, d []sharepartition.DeadLetter) {
			calls = append(calls, deadCall{k, c, d})
		},
	})
	t.Cleanup(f.s.Close)
	f.produce(t, 0, 4)
	key, parts := f.open(t, "m1", 1)
	if got := ranges(f.fetchOnce(key, parts, 0, wide).Answer(f.tp(0))); len(got) != 1 {
		t.Fatalf("acquired %v", got)
	}
	reject := func(o int64) {
		t.Helper()
		b := []sharepartition.AckBatch{{FirstOffset: o, LastOffset: o, Types: []sharepartition.AckType{sharepartition.AckReject}}}
		if err := f.s.acknowledgePartition(key, f.tp(0), 1, false, b, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	reject(0)
	if len(calls) != 0 {
		t.Fatalf("hook called without a dead-letter topic: %+v", calls)
	}

	cfg.DeadLetter = group.DeadLetterConfig{Topic: "dlq.t", CopyRecord: true}
	if err := f.s.GroupConfigChanged("g"); err != nil {
		t.Fatal(err)
	}
	reject(1)
	want := []deadCall{{
		key:  Key{Group: "g", TopicPartition: f.tp(0)},
		cfg:  cfg.DeadLetter,
		dead: []sharepartition.DeadLetter{{FirstOffset: 1, LastOffset: 1, DeliveryCount: 1, Reason: sharepartition.DeadLetterRejected}},
	}}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("got %+v\nwant %+v", calls, want)
	}

	cfg.DeadLetter = group.DeadLetterConfig{}
	if err := f.s.GroupConfigChanged("g"); err != nil {
		t.Fatal(err)
	}
	reject(2)
	if len(calls) != 1 {
		t.Fatalf("hook still called after the topic was removed: %+v", calls[1:])
	}
}
