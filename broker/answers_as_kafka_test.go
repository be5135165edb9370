package broker_test

// Tests of answers-as-kafka (docs/log.md): each nullable or defaulted field
// holds what Apache Kafka's broker writes in the same situation. kmsg keeps
// the distinctions these tests need when decoding: a null string decodes to
// a nil pointer and "" to a pointer to "", a null array to a nil slice and
// an empty one to an empty non-nil slice.

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
)

// wantNull fails unless s is a null string.
func wantNull(t *testing.T, what string, s *string) {
	t.Helper()
	if s != nil {
		t.Fatalf("%s = %q, want null", what, *s)
	}
}

// wantString fails unless s is the non-null string want.
func wantString(t *testing.T, what string, s *string, want string) {
	t.Helper()
	if s == nil || *s != want {
		t.Fatalf("%s = %s, want %q", what, deref(s), want)
	}
}

// answers-as-kafka: Metadata v8+ answers the topic operations when asked
// (v8-v10 the cluster operations too), INT32_MIN when not; an unknown topic
// ID gets none, as KafkaApis sets them only on the topics it looked up.
func TestAnswersAsKafkaMetadataAuthorizedOperations(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("ops")
	const topicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	const clusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	metadata := func(version int16, include bool, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		req.IncludeTopicAuthorizedOperations = include
		req.IncludeClusterAuthorizedOperations = include
		req.Topics = topics
		return c.request(req).(*kmsg.MetadataResponse)
	}
	named := kmsg.NewMetadataRequestTopic()
	named.Topic = kmsg.StringPtr("ops")
	unknownName := kmsg.NewMetadataRequestTopic()
	unknownName.Topic = kmsg.StringPtr("no-such-topic")

	resp := metadata(10, true, named, unknownName)
	if resp.AuthorizedOperations != clusterOps {
		t.Fatalf("v10 cluster operations %#x, want %#x", resp.AuthorizedOperations, clusterOps)
	}
	for _, mt := range resp.Topics {
		if mt.AuthorizedOperations != topicOps {
			t.Fatalf("v10 topic %s operations %#x, want %#x", deref(mt.Topic), mt.AuthorizedOperations, topicOps)
		}
	}
	all := metadata(12, true) // null topics: every topic
	if len(all.Topics) == 0 || all.Topics[0].AuthorizedOperations != topicOps {
		t.Fatalf("v12 all topics: %+v, want operations %#x", all.Topics, topicOps)
	}

	unknownID := kmsg.NewMetadataRequestTopic()
	unknownID.TopicID = [16]byte{1}
	resp = metadata(12, true, unknownID)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || resp.Topics[0].AuthorizedOperations != math.MinInt32 {
		t.Fatalf("unknown topic ID answered %+v, want UNKNOWN_TOPIC_ID with operations INT32_MIN", resp.Topics)
	}

	resp = metadata(10, false, named)
	if resp.AuthorizedOperations != math.MinInt32 || resp.Topics[0].AuthorizedOperations != math.MinInt32 {
		t.Fatalf("not asked: cluster %#x, topic %#x, want INT32_MIN", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
}

// answers-as-kafka: OffsetFetch metadata is "" (NO_METADATA), never null,
// also on partitions answered with an error.
func TestAnswersAsKafkaOffsetFetchMetadata(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("committed")
	for _, version := range []int16{7, 10} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		req.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "committed", []int32{0}
		req.Topics = append(req.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		known := kmsg.NewOffsetFetchRequestGroupTopic()
		known.Topic, known.Partitions = "committed", []int32{0}
		unknown := kmsg.NewOffsetFetchRequestGroupTopic()
		unknown.TopicID, unknown.Partitions = [16]byte{9}, []int32{0}
		if version >= 10 {
			meta := c.request(func() kmsg.Request {
				m := kmsg.NewPtrMetadataRequest()
				m.Version = 12
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr("committed")
				m.Topics = append(m.Topics, t)
				return m
			}()).(*kmsg.MetadataResponse)
			known.TopicID = meta.Topics[0].TopicID
		}
		rg.Topics = append(rg.Topics, known, unknown)
		req.Groups = append(req.Groups, rg)
		resp := c.request(req).(*kmsg.OffsetFetchResponse)
		if version < 8 {
			p := resp.Topics[0].Partitions[0]
			wantString(t, "v7 uncommitted partition metadata", p.Metadata, "")
			continue
		}
		topics := resp.Groups[0].Topics
		if len(topics) != 2 {
			t.Fatalf("v%d answered %d topics, want 2", version, len(topics))
		}
		wantString(t, "uncommitted partition metadata", topics[0].Partitions[0].Metadata, "")
		if p := topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("unknown topic ID answered %v", kerr.ErrorForCode(p.ErrorCode))
		}
		wantString(t, "UNKNOWN_TOPIC_ID partition metadata", topics[1].Partitions[0].Metadata, "")
	}
}

// answers-as-kafka: FindCoordinator's ErrorMessage is "NONE" on success at
// v1-v3 and "" for every key at v4+, as KafkaApis writes it.
func TestAnswersAsKafkaFindCoordinatorErrorMessage(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	find := func(version int16, key string) *kmsg.FindCoordinatorResponse {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = version
		req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
		return c.request(req).(*kmsg.FindCoordinatorResponse)
	}
	resp := find(3, "g")
	wantString(t, "v3 success ErrorMessage", resp.ErrorMessage, "NONE")
	resp = find(3, "")
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
		t.Fatalf("v3 empty key: %v with message %s, want INVALID_REQUEST with a message", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	resp = find(4, "g")
	wantString(t, "v4 success ErrorMessage", resp.Coordinators[0].ErrorMessage, "")
	resp = find(6, "")
	if resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v6 empty key: %v, want INVALID_REQUEST", kerr.ErrorForCode(resp.Coordinators[0].ErrorCode))
	}
	wantString(t, "v6 error ErrorMessage", resp.Coordinators[0].ErrorMessage, "")
}

// answers-as-kafka: a Produce partition's ErrorMessage is null on success
// and for errors without a custom message (here CORRUPT_MESSAGE and
// UNKNOWN_TOPIC_OR_PARTITION), as Kafka's LogAppendResult.errorMessage.
func TestAnswersAsKafkaProduceErrorMessage(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("p")
	cases := []struct {
		name  string
		topic string
		batch []byte
		want  int16
	}{
		{"success", "p", recordBatch([]int64{1}, 0, nil, false), 0},
		{"corrupt", "p", recordBatch([]int64{1}, 0, nil, true), kerr.CorruptMessage.Code},
		{"unknown topic", "nope", recordBatch([]int64{1}, 0, nil, false), kerr.UnknownTopicOrPartition.Code},
	}
	for _, tc := range cases {
		resp := c.request(produceRequest(tc.topic, tc.batch)).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != tc.want {
			t.Fatalf("%s: %v, want %v", tc.name, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(tc.want))
		}
		wantNull(t, tc.name+" ErrorMessage", p.ErrorMessage)
	}
}

// answers-as-kafka: a CreateTopics v5+ topic that failed answers an empty
// Configs list, not a null one (the field's default in Kafka).
func TestAnswersAsKafkaCreateTopicsFailedConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bad", 0, -1
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.CreateTopicsResponse)
	st := resp.Topics[0]
	if st.ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("answered %v, want INVALID_PARTITIONS", kerr.ErrorForCode(st.ErrorCode))
	}
	if st.Configs == nil || len(st.Configs) != 0 {
		t.Fatalf("failed topic Configs %#v, want an empty list (not null)", st.Configs)
	}
	if st.NumPartitions != -1 || st.ReplicationFactor != -1 {
		t.Fatalf("failed topic: %d partitions, factor %d, want -1 and -1", st.NumPartitions, st.ReplicationFactor)
	}
}

// answers-as-kafka: with delete.topic.enable=false Kafka fails the whole
// DeleteTopics request, so each topic's ErrorMessage is null.
func TestAnswersAsKafkaDeleteTopicsDisabledMessage(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"delete.topic.enable": "false"}})
	c := dialRaw(t, addr)
	c.createTopics("kept")
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr("kept")
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != kerr.TopicDeletionDisabled.Code {
		t.Fatalf("answered %v, want TOPIC_DELETION_DISABLED", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	wantNull(t, "ErrorMessage", resp.Topics[0].ErrorMessage)
}

// answers-as-kafka: DescribeConfigs answers ErrorMessage "" on success and
// for an unknown topic (Kafka's ConfigHelper sets none; the default is
// ""), and an empty ConfigNames list means every config, as null does.
func TestAnswersAsKafkaDescribeConfigs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("conf")
	describe := func(topic string, names []string) kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, names
		req.Resources = append(req.Resources, rr)
		return c.request(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	}
	all := describe("conf", nil)
	wantString(t, "success ErrorMessage", all.ErrorMessage, "")
	if len(all.Configs) == 0 {
		t.Fatal("null ConfigNames described no configs")
	}
	if empty := describe("conf", []string{}); len(empty.Configs) != len(all.Configs) {
		t.Fatalf("empty ConfigNames described %d configs, null %d; want the same", len(empty.Configs), len(all.Configs))
	}
	for _, cfg := range all.Configs {
		if cfg.Documentation != nil {
			t.Fatalf("%s: documentation %q without IncludeDocumentation, want null", cfg.Name, *cfg.Documentation)
		}
		if len(cfg.ConfigSynonyms) != 0 { // not nullable: empty on the wire
			t.Fatalf("%s: synonyms %+v without IncludeSynonyms, want none", cfg.Name, cfg.ConfigSynonyms)
		}
	}
	unknown := describe("nope", nil)
	if unknown.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic answered %v", kerr.ErrorForCode(unknown.ErrorCode))
	}
	wantString(t, "unknown topic ErrorMessage", unknown.ErrorMessage, "")
}

// answers-as-kafka: DescribeProducers answers an unknown topic with the
// error's own message (ApiError(UNKNOWN_TOPIC_OR_PARTITION)) and an
// unknown partition of a known topic with none.
func TestAnswersAsKafkaDescribeProducersMessage(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("prod")
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, name := range []string{"nope", "prod"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0, 99}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.request(req).(*kmsg.DescribeProducersResponse)
	unknownTopic, known, unknownPartition := resp.Topics[0].Partitions[0], resp.Topics[1].Partitions[0], resp.Topics[1].Partitions[1]
	if unknownTopic.ErrorCode != kerr.UnknownTopicOrPartition.Code || unknownPartition.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("answered %+v", resp.Topics)
	}
	wantString(t, "unknown topic ErrorMessage", unknownTopic.ErrorMessage, "This server does not host this topic-partition.")
	wantNull(t, "unknown partition ErrorMessage", unknownPartition.ErrorMessage)
	wantNull(t, "success ErrorMessage", known.ErrorMessage)
}

// answers-as-kafka: a ShareFetch or ShareAcknowledge that fails as a
// whole carries only the code (their getErrorResponse): ErrorMessage null.
func TestAnswersAsKafkaShareTopLevelMessage(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	// An empty member ID is INVALID_REQUEST for both.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 1
	ack.GroupID, ack.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("")
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.Version = 1
	fetch.GroupID, fetch.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("")
	fetch.MinBytes, fetch.MaxBytes, fetch.MaxRecords, fetch.BatchSize = 1, 1<<20, 10, 10
	ackResp := c.request(ack).(*kmsg.ShareAcknowledgeResponse)
	fetchResp := c.request(fetch).(*kmsg.ShareFetchResponse)
	for _, r := range []struct {
		name    string
		code    int16
		message *string
	}{{"ShareAcknowledge", ackResp.ErrorCode, ackResp.ErrorMessage}, {"ShareFetch", fetchResp.ErrorCode, fetchResp.ErrorMessage}} {
		if r.code != kerr.InvalidRequest.Code {
			t.Fatalf("%s answered %v, want INVALID_REQUEST", r.name, kerr.ErrorForCode(r.code))
		}
		wantNull(t, r.name+" top-level ErrorMessage", r.message)
	}
}

// answers-as-kafka: CurrentLeader on a ShareFetch or ShareAcknowledge
// partition that is not refused stays as Kafka's generated class makes
// it. The schemas (ShareFetchResponse.json, ShareAcknowledgeResponse.json)
// give LeaderId and LeaderEpoch no default, so they are 0/0; KafkaApis
// fills them in only for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH.
// (kfake sends -1/-1 here.)
func TestAnswersAsKafkaShareCurrentLeaderNotRefused(t *testing.T) {
	// Two nodes, and the partition's leadership moved away and back, so
	// node 0 leads it at epoch 2: an answer that filled in the real
	// leader would say 0/2, Kafka's default says 0/0.
	b, addr := startBroker(t, broker.Config{Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topicID := seedShareTopic(t, ctx, cl, 3)
	var led cluster.Leadership
	for _, node := range []int32{1, 0} {
		if led, err = b.MoveLeader("t", 0, node); err != nil {
			t.Fatalf("move the leader to %d: %v", node, err)
		}
	}
	if led.Leader != 0 || led.Epoch == 0 {
		t.Fatalf("leadership %+v, want node 0 at a raised epoch", led)
	}
	s := &rawShare{t: t, c: dialRaw(t, addr), group: "g", topicID: topicID}
	fetch := partitionOf(t, s.fetch(2, "m1", 0, nil, nil))
	if len(fetch.AcquiredRecords) == 0 || fetch.ErrorCode != 0 {
		t.Fatalf("fetch answered %+v", fetch)
	}
	if l := fetch.CurrentLeader; l.LeaderID != 0 || l.LeaderEpoch != 0 {
		t.Errorf("ShareFetch CurrentLeader %d/%d, want 0/0", l.LeaderID, l.LeaderEpoch)
	}
	ack := s.ack(2, "m1", 1, false, []ackSpec{{0, 0, []int8{1}}})
	p := ack.Topics[0].Partitions[0]
	wantCode(t, "accept", p.ErrorCode, nil)
	if l := p.CurrentLeader; l.LeaderID != 0 || l.LeaderEpoch != 0 {
		t.Errorf("ShareAcknowledge CurrentLeader %d/%d, want 0/0", l.LeaderID, l.LeaderEpoch)
	}
}
