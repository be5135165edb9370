package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Moving a group ID between the classic protocol and KIP-848 (groups.md
// "Moving between the classic and KIP-848 protocols") with real kgo
// clients on the real clock: group.initial.rebalance.delay.ms=0 so a lone
// classic consumer need not wait, a 100 ms KIP-848 heartbeat so the group
// settles fast. Every wait is bounded by the test context; nothing sleeps.

func migrationBroker(t *testing.T) (string, context.Context, *kgo.Client) {
	t.Helper()
	_, addr := startBroker(t, broker.Config{Props: map[string]string{
		"group.initial.rebalance.delay.ms":         "0",
		"group.consumer.heartbeat.interval.ms":     "100",
		"group.consumer.min.heartbeat.interval.ms": "10",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	mustCreate(t, ctx, kadm.NewClient(adm), "t", 3, nil)
	return addr, ctx, adm
}

// produceRound appends one record to each of t's three partitions.
func produceRound(t *testing.T, ctx context.Context, adm *kgo.Client, round int) {
	t.Helper()
	var rs []*kgo.Record
	for p := range int32(3) {
		rs = append(rs, &kgo.Record{Topic: "t", Partition: p, Value: fmt.Appendf(nil, "r%d-p%d", round, p)})
	}
	if err := adm.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeCommitClose runs one group member over t with the given extra
// options (kgo.ServerSideBalancer for KIP-848), polls until it has n
// records, commits them and closes (leaving the group). It returns the
// offsets it polled, by partition.
func consumeCommitClose(t *testing.T, ctx context.Context, addr, group string, n int, opts ...kgo.Opt) map[int32][]int64 {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]int64{}
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records before the deadline", seen, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("poll %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r.Offset)
			seen++
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return got
}

// awaitListed waits until ListGroups shows group with type/state want.
func awaitListed(t *testing.T, ctx context.Context, adm *kgo.Client, group, want string) {
	t.Helper()
	var last []string
	for {
		last = listShareGroups(t, ctx, adm, nil, nil)
		if slices.Contains(last, group+"/"+want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never listed as %s; last listing %v", group, want, last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func wantOffsets(t *testing.T, who string, got map[int32][]int64, want int64) {
	t.Helper()
	for p := range int32(3) {
		if !slices.Equal(got[p], []int64{want}) {
			t.Fatalf("%s polled %v, want exactly offset %d of every partition", who, got, want)
		}
	}
}

// empty-upgrade, then empty-downgrade: a classic kgo consumer commits and
// leaves; a KIP-848 kgo consumer in the same group resumes after its
// commits, commits and leaves; a classic consumer resumes after those.
func TestKgoGroupMovesBetweenClassicAndKIP848(t *testing.T) {
	addr, ctx, adm := migrationBroker(t)
	const group = "moving"
	for round := range 3 {
		produceRound(t, ctx, adm, round)
	}
	classic := consumeCommitClose(t, ctx, addr, group, 9)
	for p := range int32(3) {
		if !slices.Equal(classic[p], []int64{0, 1, 2}) {
			t.Fatalf("first classic consumer polled %v", classic)
		}
	}
	awaitListed(t, ctx, adm, group, "classic/Empty")

	produceRound(t, ctx, adm, 3)
	upgraded := consumeCommitClose(t, ctx, addr, group, 3, kgo.ServerSideBalancer())
	wantOffsets(t, "the KIP-848 consumer", upgraded, 3)
	awaitListed(t, ctx, adm, group, "consumer/Empty")
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Groups[0].ErrorCode != 0 || resp.Groups[0].State != "Empty" {
		t.Fatalf("ConsumerGroupDescribe after the upgrade: %v %+v", err, resp)
	}
	if got := committedOffsets(t, ctx, kadm.NewClient(adm), group, "t"); got[0] != 4 || got[1] != 4 || got[2] != 4 {
		t.Fatalf("offsets committed by the KIP-848 consumer: %v", got)
	}

	produceRound(t, ctx, adm, 4)
	downgraded := consumeCommitClose(t, ctx, addr, group, 3)
	wantOffsets(t, "the classic consumer after the KIP-848 one", downgraded, 4)
	awaitListed(t, ctx, adm, group, "classic/Empty")
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if resp, err := dg.RequestWith(ctx, adm); err != nil || resp.Groups[0].ErrorCode != 0 || resp.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("DescribeGroups after the downgrade: %v %+v", err, resp)
	}
	req.Groups = []string{group}
	if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Groups[0].ErrorCode != 69 {
		t.Fatalf("ConsumerGroupDescribe after the downgrade: %v %+v", err, resp)
	}
}

// online-upgrade-not-served and classic-join-not-served: groups with
// members keep their kind, and the other protocol's join gets Kafka's
// answer with group.consumer.migration.policy=disabled.
func TestNonEmptyGroupsDoNotMove(t *testing.T) {
	addr, ctx, adm := migrationBroker(t)

	// A classic member stays in "busy"; a KIP-848 join answers 69.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("busy"), kgo.ConsumeTopics("t"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for !cl.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	awaitListed(t, ctx, adm, "busy", "classic/Stable")
	if resp := cgBeat(t, ctx, adm, "busy", &cgMember{id: "m848"}); resp.ErrorCode != 69 {
		t.Fatalf("KIP-848 join of a classic group with a member: code %d", resp.ErrorCode)
	}
	awaitListed(t, ctx, adm, "busy", "classic/Stable")

	// A KIP-848 member in "busy848"; a classic JoinGroup answers 23.
	if resp := cgBeat(t, ctx, adm, "busy848", &cgMember{id: "m848"}); resp.ErrorCode != 0 {
		t.Fatalf("KIP-848 join: code %d", resp.ErrorCode)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "busy848", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = []kmsg.JoinGroupRequestProtocol{proto}
	if resp, err := join.RequestWith(ctx, adm); err != nil || resp.ErrorCode != 23 {
		t.Fatalf("classic JoinGroup on a KIP-848 group with a member: %v %+v", err, resp)
	}
	awaitListed(t, ctx, adm, "busy848", "consumer/Stable")
}
