package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Raw requests for the checks real clients do not reach: a follower's
// fetch, host-bound ACLs, the cluster's authorized operations, a consumer
// group naming a topic its describer may not see.
func TestACLRawChecks(t *testing.T) {
	ab := startACLBroker(t, nil)
	const topic = "raw"
	ab.createTopic(t, topic)
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpRead))
	alice := ab.client(t, "alice").Broker(0)
	topics, err := ab.admin(t).ListTopics(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}

	// kgo sends the highest version both sides know: the topic by ID and
	// the replica in ReplicaState (v15+).
	fetch := func(replicaID int32) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.MaxBytes = replicaID, replicaID, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topics[topic].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), alice)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	// A consumer's fetch needs READ; a follower's CLUSTER_ACTION.
	if code := fetch(-1); code != 0 {
		t.Fatalf("consumer fetch with READ: %d", code)
	}
	if code := fetch(1); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch without CLUSTER_ACTION: %d", code)
	}

	// Rule acl-host: an ALLOW bound to another host does not apply; one
	// bound to the client's address does.
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts("10.9.9.9").Topics(topic).Operations(kadm.OpRead))
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lt.Partitions = append(lt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
	lo.Topics = append(lo.Topics, lt)
	listOffsets := func() int16 {
		t.Helper()
		resp, err := lo.RequestWith(testCtx(t), ab.client(t, "bob").Broker(0))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := listOffsets(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("ListOffsets with an ACL for another host: %d", code)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=bob").AllowHosts("127.0.0.1").Topics(topic).Operations(kadm.OpRead))
	if code := listOffsets(); code != 0 {
		t.Fatalf("ListOffsets with an ACL for 127.0.0.1: %d", code)
	}
	// The listing checks (Metadata of all topics) match the same host.
	if !ab.listsTopic(t, "bob", topic) {
		t.Fatal("Metadata of all topics hides the topic an ACL for 127.0.0.1 lets bob read")
	}

	// Rule authorized-operations: DescribeCluster answers 0 without
	// DESCRIBE on CLUSTER, the allowed cluster operations with it.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	resp, err := dc.RequestWith(testCtx(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterAuthorizedOperations != 0 {
		t.Fatalf("DescribeCluster as alice: %d, operations %b", resp.ErrorCode, resp.ClusterAuthorizedOperations)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Clusters().Operations(kadm.OpDescribe))
	if resp, err = dc.RequestWith(testCtx(t), alice); err != nil {
		t.Fatal(err)
	}
	if resp.ClusterAuthorizedOperations != 1<<8 {
		t.Fatalf("DescribeCluster with DESCRIBE: operations %b, want DESCRIBE (bit 8)", resp.ClusterAuthorizedOperations)
	}
}
