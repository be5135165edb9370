package broker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharebroker/sharebroker/broker"
)

// adminTimeout bounds every admin test's conversation with the broker.
const adminTimeout = 20 * time.Second

// newAdmin returns a kgo client and a kadm client on it, closed at the end
// of the test, and a context bounded by adminTimeout.
func newAdmin(t *testing.T, addr string) (context.Context, *kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	t.Cleanup(cancel)
	return ctx, cl, kadm.NewClient(cl)
}

// mustCreate creates a topic through kadm and fails the test on any error.
func mustCreate(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) kadm.CreateTopicResponse {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	return resp
}

// produceN writes n records to partition 0 of topic.
func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// pinnedClient returns a client that speaks at most version v of API key.
// kgo sends every request at the highest version both sides know, so this
// is how a test picks an older version.
func pinnedClient(t *testing.T, addr string, key, v int16) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key, v)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ptr[T any](v T) *T { return &v }

// wantErr checks a response's error code, and that a failure says something.
func wantErr(t *testing.T, code int16, msg *string, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if code != wantCode {
		t.Fatalf("error code %v, want %v (message %v)", kerr.ErrorForCode(code), want, deref(msg))
	}
	if want != nil && (msg == nil || *msg == "") {
		t.Fatalf("%v without an error message", want)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestAdminCreateTopics(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": "2"}})
	ctx, _, adm := newAdmin(t, addr)

	resp := mustCreate(t, ctx, adm, "three", 3, map[string]*string{"retention.ms": ptr("60000")})
	if resp.ID == (kadm.TopicID{}) || resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		t.Fatalf("response: %+v", resp)
	}
	if c := resp.Configs["retention.ms"]; cval(c) != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms in response: %+v", c)
	}
	if c := resp.Configs["cleanup.policy"]; cval(c) != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cleanup.policy in response: %+v", c)
	}
	mustCreate(t, ctx, adm, "default", -1, nil)

	details, err := adm.ListTopics(ctx, "three", "default")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details["three"].Partitions); n != 3 {
		t.Errorf("three: %d partitions, want 3", n)
	}
	if n := len(details["default"].Partitions); n != 2 {
		t.Errorf("default: %d partitions, want num.partitions=2", n)
	}
	if details["three"].ID != resp.ID {
		t.Errorf("Metadata topic ID %v, CreateTopics said %v", details["three"].ID, resp.ID)
	}

	vresp, err := adm.ValidateCreateTopics(ctx, 1, 1, nil, "validated")
	if err != nil || vresp.Error() != nil {
		t.Fatalf("validate only: %v %v", err, vresp.Error())
	}
	if details, _ := adm.ListTopics(ctx, "validated"); details.Has("validated") && details["validated"].Err == nil {
		t.Fatal("ValidateOnly created the topic")
	}
}

// rawCreateTopic returns one CreateTopics v7 request topic with the
// broker's defaults.
func rawCreateTopic(name string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
	return rt
}

func TestAdminCreateTopicsErrors(t *testing.T) {
	_, addr := startBroker(t, broker.Config{NodeID: 3})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "exists", 1, nil)

	assign := func(replicas ...[]int32) func(*kmsg.CreateTopicsRequestTopic) {
		return func(rt *kmsg.CreateTopicsRequestTopic) {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			for i, r := range replicas {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(i), r
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
		}
	}
	config := func(name string, value *string) func(*kmsg.CreateTopicsRequestTopic) {
		return func(rt *kmsg.CreateTopicsRequestTopic) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = name, value
			rt.Configs = append(rt.Configs, c)
		}
	}
	tests := []struct {
		name     string
		topic    string
		modify   func(*kmsg.CreateTopicsRequestTopic)
		want     *kerr.Error
		wantText string // in the error message
	}{
		{name: "invalid name", topic: "bad/name", want: kerr.InvalidTopicException, wantText: "bad/name"},
		{name: "exists", topic: "exists", want: kerr.TopicAlreadyExists},
		{name: "zero partitions", topic: "p0", modify: func(rt *kmsg.CreateTopicsRequestTopic) { rt.NumPartitions = 0 }, want: kerr.InvalidPartitions},
		{name: "partitions below -1", topic: "p-2", modify: func(rt *kmsg.CreateTopicsRequestTopic) { rt.NumPartitions = -2 }, want: kerr.InvalidPartitions},
		{name: "replication factor 3", topic: "rf3", modify: func(rt *kmsg.CreateTopicsRequestTopic) { rt.ReplicationFactor = 3 }, want: kerr.InvalidReplicationFactor},
		{name: "replication factor 0", topic: "rf0", modify: func(rt *kmsg.CreateTopicsRequestTopic) { rt.ReplicationFactor = 0 }, want: kerr.InvalidReplicationFactor},
		{name: "replication factor 1", topic: "rf1", modify: func(rt *kmsg.CreateTopicsRequestTopic) { rt.ReplicationFactor = 1 }},
		{name: "assignment to us", topic: "assigned", modify: assign([]int32{3}, []int32{3})},
		{name: "assignment to another broker", topic: "a1", modify: assign([]int32{1}), want: kerr.InvalidReplicaAssignment, wantText: "[1]"},
		{name: "assignment with two replicas", topic: "a2", modify: assign([]int32{3, 3}), want: kerr.InvalidReplicaAssignment},
		{name: "assignment with a gap", topic: "a3", modify: func(rt *kmsg.CreateTopicsRequestTopic) {
			assign([]int32{3}, []int32{3})(rt)
			rt.ReplicaAssignment[1].Partition = 5
		}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment with a partition count", topic: "a4", modify: func(rt *kmsg.CreateTopicsRequestTopic) {
			assign([]int32{3})(rt)
			rt.NumPartitions = 1
		}, want: kerr.InvalidRequest},
		{name: "unknown config", topic: "c1", modify: config("retention.forever", ptr("1")), want: kerr.InvalidConfig, wantText: "retention.forever"},
		{name: "removed config", topic: "c2", modify: config("message.timestamp.difference.max.ms", ptr("1")), want: kerr.InvalidConfig, wantText: "message.timestamp.difference.max.ms"},
		{name: "invalid config value", topic: "c3", modify: config("retention.ms", ptr("soon")), want: kerr.InvalidConfig, wantText: "retention.ms"},
		{name: "null config value", topic: "c4", modify: config("retention.ms", nil), want: kerr.InvalidConfig, wantText: "retention.ms"},
		{name: "broker property as topic config", topic: "c5", modify: config("log.retention.ms", ptr("1")), want: kerr.InvalidConfig, wantText: "log.retention.ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version = 7
			rt := rawCreateTopic(tt.topic)
			if tt.modify != nil {
				tt.modify(&rt)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != tt.topic {
				t.Fatalf("answered %+v", resp.Topics)
			}
			st := resp.Topics[0]
			wantErr(t, st.ErrorCode, st.ErrorMessage, tt.want)
			if tt.wantText != "" && !strings.Contains(deref(st.ErrorMessage), tt.wantText) {
				t.Fatalf("message %q does not mention %q", deref(st.ErrorMessage), tt.wantText)
			}
			if tt.want != nil && (st.NumPartitions != -1 || st.ReplicationFactor != -1 || st.TopicID != [16]byte{}) {
				t.Fatalf("failed topic reports %d partitions, factor %d, ID %x", st.NumPartitions, st.ReplicationFactor, st.TopicID)
			}
			if tt.want == nil && (st.TopicID == [16]byte{} || st.ReplicationFactor != 1) {
				t.Fatalf("created topic reports ID %x, factor %d", st.TopicID, st.ReplicationFactor)
			}
		})
	}

	t.Run("duplicate name", func(t *testing.T) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Topics = append(req.Topics, rawCreateTopic("twice"), rawCreateTopic("twice"), rawCreateTopic("once"))
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("answered %d topics, want one per name", len(resp.Topics))
		}
		wantErr(t, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest)
		wantErr(t, resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage, nil)
	})
}

func TestAdminDeleteTopics(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "byname", 1, nil)
	byID := mustCreate(t, ctx, adm, "byid", 1, nil)
	produceN(t, ctx, cl, "byname", 3)

	resps, err := adm.DeleteTopics(ctx, "byname")
	if err != nil || resps.Error() != nil {
		t.Fatalf("delete: %v %v", err, resps.Error())
	}
	// The name is free again and the new topic starts empty.
	mustCreate(t, ctx, adm, "byname", 1, nil)
	ends, err := adm.ListEndOffsets(ctx, "byname")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("byname", 0); o.Offset != 0 {
		t.Fatalf("recreated topic ends at %d, want 0", o.Offset)
	}

	named := func(name string) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = &name
		return rt
	}
	withID := func(id [16]byte) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		return rt
	}
	tests := []struct {
		name   string
		topics []kmsg.DeleteTopicsRequestTopic
		want   []*kerr.Error // one per answered topic
	}{
		{"by ID", []kmsg.DeleteTopicsRequestTopic{withID(byID.ID)}, []*kerr.Error{nil}},
		{"unknown name", []kmsg.DeleteTopicsRequestTopic{named("nope")}, []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{"unknown ID", []kmsg.DeleteTopicsRequestTopic{withID([16]byte{9})}, []*kerr.Error{kerr.UnknownTopicID}},
		{"zero ID", []kmsg.DeleteTopicsRequestTopic{withID([16]byte{})}, []*kerr.Error{kerr.InvalidRequest}},
		{"duplicate name", []kmsg.DeleteTopicsRequestTopic{named("byname"), named("byname")}, []*kerr.Error{kerr.InvalidRequest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.Version = 6
			req.Topics = tt.topics
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != len(tt.want) {
				t.Fatalf("answered %d topics, want %d", len(resp.Topics), len(tt.want))
			}
			for i, st := range resp.Topics {
				wantErr(t, st.ErrorCode, st.ErrorMessage, tt.want[i])
			}
		})
	}
	if details, _ := adm.ListTopics(ctx, "byid"); details.Has("byid") && details["byid"].Err == nil {
		t.Fatal("topic deleted by ID is still listed")
	}
}

func TestAdminDeleteTopicsDisabled(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"delete.topic.enable": "false"}})
	ctx, _, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "kept", 1, nil)
	tests := []struct {
		version int16
		want    *kerr.Error
	}{
		{6, kerr.TopicDeletionDisabled},
		{3, kerr.TopicDeletionDisabled},
		{2, kerr.InvalidRequest}, // TOPIC_DELETION_DISABLED is v3+
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("v%d", tt.version), func(t *testing.T) {
			cl := pinnedClient(t, addr, 20, tt.version)
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TopicNames = []string{"kept"}
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = ptr("kept")
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != tt.want.Code {
				t.Fatalf("answered %+v, want %v", resp.Topics, tt.want)
			}
		})
	}
	if details, err := adm.ListTopics(ctx, "kept"); err != nil || !details.Has("kept") {
		t.Fatalf("topic gone: %v", err)
	}
}

func TestAdminCreatePartitions(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "grow", 1, nil)

	resps, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || resps.Error() != nil {
		t.Fatalf("create partitions: %v %v", err, resps.Error())
	}
	if resps, err := adm.ValidateCreatePartitions(ctx, 5, "grow"); err != nil || resps.Error() != nil {
		t.Fatalf("validate only: %v %v", err, resps.Error())
	}
	details, err := adm.ListTopics(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details["grow"].Partitions); n != 3 {
		t.Fatalf("%d partitions after adding 2 (and validating 5 more), want 3", n)
	}

	tests := []struct {
		name       string
		topic      string
		count      int32
		assignment [][]int32
		want       *kerr.Error
	}{
		{name: "fewer", topic: "grow", count: 2, want: kerr.InvalidPartitions},
		{name: "same", topic: "grow", count: 3, want: kerr.InvalidPartitions},
		{name: "unknown topic", topic: "nope", count: 4, want: kerr.UnknownTopicOrPartition},
		{name: "assignment to another broker", topic: "grow", count: 4, assignment: [][]int32{{7}}, want: kerr.InvalidReplicaAssignment},
		{name: "too few assignments", topic: "grow", count: 5, assignment: [][]int32{{0}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment to us", topic: "grow", count: 4, assignment: [][]int32{{0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = tt.topic, tt.count
			for _, replicas := range tt.assignment {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = replicas
				rt.Assignment = append(rt.Assignment, a)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 {
				t.Fatalf("answered %d topics", len(resp.Topics))
			}
			wantErr(t, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tt.want)
		})
	}
	t.Run("duplicate name", func(t *testing.T) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		for range 2 {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "grow", 10
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("answered %d topics, want 1", len(resp.Topics))
		}
		wantErr(t, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest)
	})
}

func TestAdminDeleteRecords(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "log", 1, nil)
	produceN(t, ctx, cl, "log", 10)

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "log", Partition: 0, At: 4})
	resps, err := adm.DeleteRecords(ctx, os)
	if err != nil || resps.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resps.Error())
	}
	if r, _ := resps.Lookup("log", 0); r.LowWatermark != 4 {
		t.Fatalf("low watermark %d, want 4", r.LowWatermark)
	}
	starts, err := adm.ListStartOffsets(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("log", 0); o.Offset != 4 {
		t.Fatalf("log start %d, want 4", o.Offset)
	}

	tests := []struct {
		name      string
		partition int32
		offset    int64
		want      *kerr.Error
		wantLow   int64
	}{
		{name: "below log start keeps it", offset: 2, wantLow: 4},
		{name: "beyond high watermark", offset: 11, want: kerr.OffsetOutOfRange, wantLow: -1},
		{name: "below -1", offset: -2, want: kerr.OffsetOutOfRange, wantLow: -1},
		{name: "unknown partition", partition: 1, offset: 0, want: kerr.UnknownTopicOrPartition, wantLow: -1},
		{name: "high watermark", offset: -1, wantLow: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "log"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tt.partition, tt.offset
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			// Straight to the broker: kgo would refuse to route a
			// partition that Metadata does not list.
			kresp, err := cl.Broker(0).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			sp := kresp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			want := int16(0)
			if tt.want != nil {
				want = tt.want.Code
			}
			if sp.ErrorCode != want || sp.LowWatermark != tt.wantLow {
				t.Fatalf("got %v low %d, want %v low %d", kerr.ErrorForCode(sp.ErrorCode), sp.LowWatermark, tt.want, tt.wantLow)
			}
		})
	}
}

func TestAdminDescribeCluster(t *testing.T) {
	_, addr := startBroker(t, broker.Config{NodeID: 5, ClusterID: "test-cluster"})
	ctx, _, _ := newAdmin(t, addr)
	tests := []struct {
		name         string
		version      int16
		endpointType int8
		ops          bool
		want         *kerr.Error
	}{
		{name: "v0", version: 0},
		{name: "v2 with operations", version: 2, endpointType: 1, ops: true},
		{name: "v1 controllers", version: 1, endpointType: 2, want: kerr.MismatchedEndpointType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := pinnedClient(t, addr, 60, tt.version)
			req := kmsg.NewPtrDescribeClusterRequest()
			req.EndpointType = tt.endpointType
			req.IncludeClusterAuthorizedOperations = tt.ops
			req.IncludeFencedBrokers = true
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, resp.ErrorCode, resp.ErrorMessage, tt.want)
			if tt.want != nil {
				return
			}
			if resp.ClusterID != "test-cluster" || resp.ControllerID != 5 || len(resp.Brokers) != 1 {
				t.Fatalf("response %+v", resp)
			}
			b := resp.Brokers[0]
			if b.NodeID != 5 || b.IsFenced || fmt.Sprintf("%s:%d", b.Host, b.Port) != addr {
				t.Fatalf("broker %+v, want node 5 at %s", b, addr)
			}
			if tt.ops != (resp.ClusterAuthorizedOperations > 0) {
				t.Fatalf("authorized operations %d with include=%v", resp.ClusterAuthorizedOperations, tt.ops)
			}
		})
	}
}
