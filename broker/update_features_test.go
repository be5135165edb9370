package broker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// refusedPrefix is what a Kafka 4.x controller puts before the refusal of
// the feature it stopped at (QuorumController.updateFeatures).
const refusedPrefix = "The update failed for all features since the following feature had an error: "

// finalizedLevel is name's finalized level in ApiVersions (0: not listed)
// and the finalized epoch.
func finalizedLevel(t *testing.T, addr, name string) (int16, int64) {
	t.Helper()
	resp := releaseAPIVersions(t, addr)
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, resp.FinalizedFeaturesEpoch
		}
	}
	return 0, resp.FinalizedFeaturesEpoch
}

// updateRaw sends one UpdateFeatures at version v on a connection of its
// own and returns the answer.
func updateRaw(t *testing.T, addr string, v int16, validateOnly bool, name string, level int16, upgradeType int8) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly = v, validateOnly
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	u.AllowDowngrade = upgradeType >= 2
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	return rawconn.Dial(t, addr).Request(req).(*kmsg.UpdateFeaturesResponse)
}

// TestUpdateFeaturesKadm: features-validate-only, features-update-rules,
// features-unknown, features-in-api-versions, features-gate-live. Against
// --kafka-version 4.1 (share.version 0), with kadm's UpdateFeatures as
// kafka-features.sh sends it: a validate-only upgrade changes nothing; the
// upgrade finalizes share.version 1, moves the epoch, and lets a share
// consumer in; a downgrade sent as an upgrade and an unknown feature are
// refused with INVALID_UPDATE_VERSION and Kafka's messages
// (FeatureControlManager.updateFeature, QuorumFeatures.reasonNotSupported).
func TestUpdateFeaturesKadm(t *testing.T) {
	addr := startRelease(t, "4.1", nil)
	ctx, cl, adm := newAdmin(t, addr)
	share := kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 1, UpgradeType: 1}
	mustCreate(t, ctx, adm, "gate", 1, nil)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "gate", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	res, err := adm.UpdateFeatures(ctx, true, share)
	if err != nil || res.Error() != nil {
		t.Fatalf("validate-only: %v %v", err, res.Error())
	}
	if level, epoch := finalizedLevel(t, addr, "share.version"); level != 0 || epoch != 1 {
		t.Fatalf("after validate-only: share.version %d epoch %d, want unchanged 0 at 1", level, epoch)
	}
	if err := pollShare(t, addr, "gate", "g-gate"); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("share consumer at share.version 0: %v", err)
	}

	res, err = adm.UpdateFeatures(ctx, false, share)
	if err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", err, res.Error())
	}
	if level, epoch := finalizedLevel(t, addr, "share.version"); level != 1 || epoch != 2 {
		t.Fatalf("after the upgrade: share.version %d epoch %d, want 1 at 2", level, epoch)
	}
	setGroupConfig(t, ctx, cl, "g-gate", "share.auto.offset.reset", "earliest")
	if err := pollShare(t, addr, "gate", "g-gate"); err != nil {
		t.Fatalf("share consumer after share.version 1: %v", err)
	}

	// A downgrade needs a downgrade type.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 0, UpgradeType: 1})
	if err != nil || !errors.Is(res.Error(), kerr.InvalidUpdateVersion) {
		t.Fatalf("downgrade as an upgrade through kadm: %v %v", err, res.Error())
	}
	resp := updateRaw(t, addr, 2, false, "share.version", 0, 1)
	want := refusedPrefix + "Invalid update version 0 for feature share.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
		t.Fatalf("downgrade as an upgrade: %d %v\nwant %s", resp.ErrorCode, strp(resp.ErrorMessage), want)
	}
	// A feature Kafka 4.1 does not have.
	resp = updateRaw(t, addr, 1, false, "foo.version", 1, 1)
	want = refusedPrefix + "Invalid update version 1 for feature foo.version. Local controller 0 does not support this feature."
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || strp(resp.ErrorMessage) != want || len(resp.Results) != 0 {
		t.Fatalf("unknown feature: %d %q %d rows\nwant %s and no rows", resp.ErrorCode, strp(resp.ErrorMessage), len(resp.Results), want)
	}
	// A safe downgrade to 0 removes it, and the gate closes again; at v1
	// the answer has a NONE row per feature.
	resp = updateRaw(t, addr, 1, false, "share.version", 0, 2)
	if resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].Feature != "share.version" || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("safe downgrade at v1: %+v", resp)
	}
	if level, epoch := finalizedLevel(t, addr, "share.version"); level != 0 || epoch != 3 {
		t.Fatalf("after the downgrade: share.version %d epoch %d, want 0 at 3", level, epoch)
	}
	if err := pollShare(t, addr, "gate", "g-gate2"); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("share consumer after the downgrade: %v", err)
	}
}

func strp(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestUpdateFeaturesAuthorized: features-update-authorized. With an
// authorizer, a principal without ALTER on CLUSTER is refused with
// CLUSTER_AUTHORIZATION_FAILED and nothing changes.
func TestUpdateFeaturesAuthorized(t *testing.T) {
	addr := startRelease(t, "4.1", map[string]string{
		"authorizer.class.name":          standardAuthorizer,
		"allow.everyone.if.no.acl.found": "false",
	})
	resp := updateRaw(t, addr, 2, false, "share.version", 1, 1)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("unauthorized UpdateFeatures: code %d", resp.ErrorCode)
	}
	if level, _ := finalizedLevel(t, addr, "share.version"); level != 0 {
		t.Fatalf("share.version %d after a refused update", level)
	}
}

// TestFeaturesKeptInDataDir: features-kept, features-kept-checked. A level
// UpdateFeatures set survives a restart with the data directory, epoch
// included; under a newer --kafka-version the directory keeps its levels;
// under an older one that does not support a kept level it refuses the
// start.
func TestFeaturesKeptInDataDir(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{broker.KafkaVersionProperty: "4.2"}
	b1 := testbroker.Start(t, broker.Config{DataDir: dir, Props: props})
	if resp := updateRaw(t, b1.Addr().String(), 2, false, "transaction.version", 1, 2); resp.ErrorCode != 0 {
		t.Fatalf("downgrade transaction.version: %d %s", resp.ErrorCode, strp(resp.ErrorMessage))
	}
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}
	b2 := testbroker.Start(t, broker.Config{DataDir: dir, Props: props})
	if level, epoch := finalizedLevel(t, b2.Addr().String(), "transaction.version"); level != 1 || epoch != 2 {
		t.Fatalf("after restart: transaction.version %d epoch %d, want 1 at 2", level, epoch)
	}
	if err := testbroker.Close(b2); err != nil {
		t.Fatal(err)
	}
	// Under 4.4 the directory keeps 4.2's levels: metadata.version 29,
	// share.version 1, not 4.4's defaults.
	b4 := testbroker.Start(t, broker.Config{DataDir: dir, Props: map[string]string{broker.KafkaVersionProperty: "4.4"}})
	if mv, _ := finalizedLevel(t, b4.Addr().String(), "metadata.version"); mv != 29 {
		t.Fatalf("under 4.4: metadata.version %d, want the kept 29", mv)
	}
	if sv, _ := finalizedLevel(t, b4.Addr().String(), "share.version"); sv != 1 {
		t.Fatalf("under 4.4: share.version %d, want the kept 1", sv)
	}
	if err := testbroker.Close(b4); err != nil {
		t.Fatal(err)
	}
	// 4.2 finalized metadata.version 29, which 4.1 does not support.
	b3, err := broker.New(broker.Config{Listen: "127.0.0.1:0", DataDir: dir, Props: map[string]string{broker.KafkaVersionProperty: "4.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer testbroker.Close(b3)
	if err := b3.Start(); err == nil || !strings.Contains(err.Error(), "metadata.version") {
		t.Fatalf("4.1 on a 4.2 directory: %v, want a refusal naming metadata.version", err)
	}
}

// TestDeadLettersOnAtRunTime: features-gate-live. A broker at
// share.version 1 writes no dead letter for a rejected record; kadm's
// UpdateFeatures share.version=2 (kafka-features.sh upgrade --feature
// share.version=2) turns dead-letter queues on for the next one, and a
// safe downgrade back to 1 turns them off again.
func TestDeadLettersOnAtRunTime(t *testing.T) {
	e := newDLQEnv(t, map[string]string{"share.version": "1"}, false, "errors.deadletterqueue.topic.name", dlqTopic)
	adm := kadm.NewClient(e.admin)
	set := func(level int16, upgradeType int8) {
		t.Helper()
		res, err := adm.UpdateFeatures(e.ctx, false, kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: level, UpgradeType: upgradeType})
		if err != nil || res.Error() != nil {
			t.Fatalf("share.version %d: %v %v", level, err, res.Error())
		}
	}
	c1, _ := e.consumer()
	reject := func(value string) {
		t.Helper()
		e.produce(value)
		one(t, e.poll(c1), value, 1).Ack(kgo.AckReject)
		e.flush(c1)
	}
	reject("r0")
	if n := len(e.deadLetters()); n != 0 {
		t.Fatalf("%d dead letters at share.version 1", n)
	}
	set(2, 1)
	reject("r1")
	dead := e.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters after share.version 2, want 1", len(dead))
	}
	wantDLQHeaders(t, dead[0], "1", "1", "Offset rejected by client.")
	set(1, 2)
	reject("r2")
	if n := len(e.deadLetters()); n != 1 {
		t.Fatalf("%d dead letters after the downgrade to 1, want still 1", n)
	}
}

// TestGroupVersionGate: features-api-gate, features-gate-live. At
// group.version 0 (kafka-features.sh downgrade --feature group.version=0)
// KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
// UNSUPPORTED_VERSION, as KafkaApis does when
// isConsumerGroupProtocolEnabled is false; the upgrade back opens them.
func TestGroupVersionGate(t *testing.T) {
	addr := startRelease(t, "4.4", nil)
	heartbeat := func() int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g848", "m1-aaaaaaaaaaaaaaaaaaaa", 30000
		req.SubscribedTopicNames = []string{"t"}
		return rawconn.Dial(t, addr).Request(req).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	describe := func() int16 {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups = 1, []string{"g848"}
		return rawconn.Dial(t, addr).Request(req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode
	}
	if code := heartbeat(); code != 0 {
		t.Fatalf("heartbeat at group.version 1: code %d", code)
	}
	if resp := updateRaw(t, addr, 2, false, "group.version", 0, 2); resp.ErrorCode != 0 {
		t.Fatalf("downgrade: %d %s", resp.ErrorCode, strp(resp.ErrorMessage))
	}
	if hb, d := heartbeat(), describe(); hb != kerr.UnsupportedVersion.Code || d != kerr.UnsupportedVersion.Code {
		t.Fatalf("at group.version 0: heartbeat %d, describe %d; want UNSUPPORTED_VERSION", hb, d)
	}
	if resp := updateRaw(t, addr, 2, false, "group.version", 1, 1); resp.ErrorCode != 0 {
		t.Fatalf("upgrade: %d %s", resp.ErrorCode, strp(resp.ErrorMessage))
	}
	if d := describe(); d != 0 {
		t.Fatalf("describe after the upgrade: code %d", d)
	}
}

// TestShareFetchGateAnswer: features-api-gate. At share.version 0 a
// ShareFetch is answered as ShareFetchRequest.getErrorResponse answers:
// UNSUPPORTED_VERSION at the top level and no topics.
func TestShareFetchGateAnswer(t *testing.T) {
	addr := startRelease(t, "4.1", nil)
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m1-aaaaaaaaaaaaaaaaaaaa"), 0
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = [16]byte{1}
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawconn.Dial(t, addr).Request(req).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.Topics) != 0 {
		t.Fatalf("ShareFetch at share.version 0: code %d, %d topics; want UNSUPPORTED_VERSION and none", resp.ErrorCode, len(resp.Topics))
	}
}
