package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShareVersionOffUnloads: features-share-off-unloads (docs/features.md).
// When share.version falls to 0 at run time, Kafka's
// SharePartitionManager.onShareVersionToggle empties the share-session
// cache and drops the cached share partitions, which load again from the
// persisted state when share groups are on again
// (SharePartitionManagerTest.testOnShareVersionToggle). Through kadm's
// UpdateFeatures, off and on again: the member's next ShareFetch with its
// old epoch finds no session (SHARE_SESSION_NOT_FOUND); a new session gets the
// records it held but never acknowledged, at the delivery count Kafka
// persisted (1 again), and not the one it accepted. On main the session
// survived the toggle and the records stayed acquired, so the old epoch
// was served and nothing was redelivered.
func TestShareVersionOffUnloads(t *testing.T) {
	s := newRawShare(t, 3)
	ctx, cl := s.client()
	adm := kadm.NewClient(cl)
	const member = "m1-aaaaaaaaaaaaaaaaaaaa"
	s.join(member, "t")
	first := partitionOf(t, s.fetch(1, member, 0, nil, nil))
	if len(first.AcquiredRecords) != 1 || first.AcquiredRecords[0].FirstOffset != 0 || first.AcquiredRecords[0].LastOffset != 2 {
		t.Fatalf("first fetch acquired %+v, want 0-2", first.AcquiredRecords)
	}
	if r := s.ack(1, member, 1, false, []ackSpec{{0, 0, []int8{1}}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accepting offset 0: %+v", r)
	}

	for _, u := range []kadm.FeatureUpdate{
		{Feature: "share.version", MaxVersionLevel: 0, UpgradeType: 2}, // SAFE_DOWNGRADE
		{Feature: "share.version", MaxVersionLevel: 1, UpgradeType: 1},
	} {
		res, err := adm.UpdateFeatures(ctx, false, u)
		if err != nil || res.Error() != nil {
			t.Fatalf("share.version to %d: %v %v", u.MaxVersionLevel, err, res.Error())
		}
	}

	if r := s.fetch(1, member, 2, nil, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("fetch with the old session's epoch after the toggle: code %d, want SHARE_SESSION_NOT_FOUND", r.ErrorCode)
	}
	// A new session; offset 1 was the member's before the toggle.
	again := partitionOf(t, s.fetch(1, member, 0, nil, nil))
	if len(again.AcquiredRecords) != 1 || again.AcquiredRecords[0].FirstOffset != 1 || again.AcquiredRecords[0].LastOffset != 2 ||
		again.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("after the toggle acquired %+v, want 1-2 at delivery count 1", again.AcquiredRecords)
	}
}
