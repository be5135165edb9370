package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Rules: api-authorization (CreateTopics, CreatePartitions, DeleteRecords,
// DeleteTopics, DescribeConfigs, IncrementalAlterConfigs).
func TestACLAdminTopics(t *testing.T) {
	ab := startACLBroker(t, nil)
	ctx := testCtx(t)
	bob := kadm.NewClient(ab.client(t, "bob"))

	created, err := bob.CreateTopic(ctx, 1, 1, nil, "team.a")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || created.ErrMessage != "Authorization failed." {
		t.Fatalf("create without CREATE: %v %q", err, created.ErrMessage)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Topics("team.").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate, kadm.OpDescribe))
	if _, err := bob.CreateTopic(ctx, 1, 1, nil, "team.a"); err != nil {
		t.Fatalf("create under a prefixed CREATE: %v", err)
	}
	if rs, err := bob.CreatePartitions(ctx, 1, "team.a"); err != nil || !errors.Is(rs["team.a"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("CreatePartitions without ALTER: %v %v", err, rs["team.a"].Err)
	}
	// kadm reports a refused resource as the call's error.
	if _, err := bob.DescribeTopicConfigs(ctx, "team.a"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DescribeConfigs without DESCRIBE_CONFIGS: %v", err)
	}
	alt, err := bob.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "team.a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(alt[0].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("IncrementalAlterConfigs without ALTER_CONFIGS: %v", alt[0].Err)
	}
	if _, err := bob.DescribeBrokerConfigs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("DescribeConfigs of the broker: %v", err)
	}
	del, err := bob.DeleteRecords(ctx, kadm.Offsets{"team.a": {0: kadm.Offset{Topic: "team.a", Partition: 0, At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := del.Lookup("team.a", 0); !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DeleteRecords without DELETE: %v", r.Err)
	}
	dt, err := bob.DeleteTopics(ctx, "team.a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dt["team.a"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DeleteTopics without DELETE: %v", dt["team.a"].Err)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts().Topics("team.").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpDelete))
	if dt, err := bob.DeleteTopics(ctx, "team.a"); err != nil || dt["team.a"].Err != nil {
		t.Fatalf("DeleteTopics with DELETE: %v %v", err, dt["team.a"].Err)
	}
}
