package conformance_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The conformance test runs every scenario against sharebroker and kfake
// and compares what the client saw. known_test.go lists each difference
// and the Kafka rule behind it; see docs/conformance.md.

var peers = []peer{sharebrokerPeer{}, kfakePeer{}}

type scenario struct {
	name string
	opts peerOpts
	run  func(e *env)
}

var scenarios = []scenario{
	{name: "consume-disjoint-complete", run: consumeDisjointComplete},
	{name: "release-redelivers", run: releaseRedelivers},
	{name: "reject-archives", run: rejectArchives},
	{name: "lock-expiry-late-accept", opts: peerOpts{shortLocks: true}, run: lockExpiryLateAccept},
	{name: "pooled-assignment", run: pooledAssignment},
	{name: "describe", run: describeFields},
	{name: "list-groups-type-filter", run: listGroupsTypeFilter},
	{name: "delete-groups", run: deleteGroups},
	{name: "fetch-max-records-0", run: fetchMaxRecordsZero},
	{name: "renew-fetch-partition-without-acks", run: renewFetchPartitionWithoutAcks},
	{name: "adjacent-ack-batches", run: adjacentAckBatches},
	{name: "ack-below-spso", run: ackBelowSPSO},
	{name: "top-level-error-lock-timeout", run: topLevelErrorLockTimeout},
	{name: "api-versions", run: apiVersions},
	{name: "join-group-on-share-group", run: joinGroupOnShareGroup},
	{name: "close-releases", run: closeReleases},
	{name: "leave-keeps-records", run: leaveKeepsRecords},
	{name: "ack-unknown-share-group", run: ackUnknownShareGroup},
	{name: "rejoin-epoch-0", run: rejoinEpochZero},
	{name: "heartbeat-interval-group-config", run: heartbeatIntervalGroupConfig},
	{name: "list-transactions-pattern", run: listTransactionsPattern}, // txn_test.go
	{name: "end-txn-v5", run: endTxnV5},                               // txn_test.go
}

func TestConformance(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			trs := make([]*transcript, len(peers))
			ok := true
			for i, p := range peers {
				ok = t.Run(p.name(), func(t *testing.T) {
					e := newEnv(t, p, sc.opts)
					sc.run(e)
					trs[i] = e.tr
				}) && ok
			}
			if !ok || slices.Contains(trs, nil) {
				return // a peer failed, or -run left it out
			}
			problems, notes := compare(knownTable, sc.name, trs[0], trs[1])
			for _, n := range notes {
				t.Log(n)
			}
			for _, p := range problems {
				t.Error(p)
			}
			if len(problems) > 0 {
				for i, p := range peers {
					t.Logf("%s transcript:", p.name())
					for _, k := range trs[i].keys {
						t.Logf("  %s: %s", k, trs[i].vals[k])
					}
				}
			}
		})
	}
}

const (
	queue = "queue"
	group = "workers"
)

// shareSetup creates topic (one partition per name) and lets group read
// it from the earliest offset.
func (e *env) shareSetup(topics ...string) {
	e.t.Helper()
	for _, tp := range topics {
		e.createTopic(tp, 1)
	}
	e.setGroupConfig(group, "share.auto.offset.reset", "earliest")
}

// Two share consumers consume and accept 20 records: each record reaches
// exactly one of them, once, with delivery count 1.
func consumeDisjointComplete(e *env) {
	const n = 20
	e.shareSetup(queue)
	for i := range n {
		e.produce(queue, fmt.Sprintf("v%d", i))
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		seen     = make(map[string]int) // value -> deliveries
		counts   = make(map[int32]bool)
		outcomes = make(map[string]bool)
		wg       sync.WaitGroup
	)
	for range 2 {
		cl, acks := e.consumer(queue, group, 5)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					seen[string(r.Value)]++
					counts[r.DeliveryCount()] = true
					r.Ack(kgo.AckAccept)
				})
				mu.Unlock()
				if err := cl.FlushAcks(ctx); err != nil {
					return // ctx ended
				}
				mu.Lock()
				for _, o := range strings.Split(acks.take(), ",") {
					if o != "" {
						outcomes[o] = true
					}
				}
				if len(seen) == n {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	e.whileClientWaits("consumers", wg.Wait)
	if e.ctx.Err() != nil {
		e.t.Fatalf("only %d of %d records before the deadline", len(seen), n)
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	var cs, os []string
	for c := range counts {
		cs = append(cs, fmt.Sprint(c))
	}
	for o := range outcomes {
		os = append(os, o)
	}
	e.note("distinct records", len(seen))
	e.note("duplicate deliveries", dups)
	e.note("delivery counts", sortedStrings(cs))
	e.note("accept outcomes", sortedStrings(os))
}

// RELEASE makes a record available again: it comes back with delivery
// count 2 (share-groups.md §1.2). One consumer, so that the record cannot
// go to whichever member happens to fetch first.
func releaseRedelivers(e *env) {
	e.shareSetup(queue)
	e.produce(queue, "r0")
	c1, acks := e.consumer(queue, group, 10)
	recs := e.poll(c1)
	e.note("first poll", printRecords(recs))
	for _, r := range recs {
		r.Ack(kgo.AckRelease)
	}
	e.flush(c1)
	e.note("release outcome", acks.take())
	recs = e.poll(c1)
	e.note("second poll", printRecords(recs))
	for _, r := range recs {
		r.Ack(kgo.AckAccept)
	}
	e.flush(c1)
	e.note("accept outcome", acks.take())
}

// REJECT archives a record: it is never delivered again, so the next poll
// is handed the following record.
func rejectArchives(e *env) {
	e.shareSetup(queue)
	e.produce(queue, "r0")
	c1, acks := e.consumer(queue, group, 10)
	recs := e.poll(c1)
	e.note("first poll", printRecords(recs))
	for _, r := range recs {
		r.Ack(kgo.AckReject)
	}
	e.flush(c1)
	e.note("reject outcome", acks.take())
	e.produce(queue, "r1")
	// Acquisition starts at the lowest available offset: were r0
	// available again, it would come first.
	e.note("second poll", printRecords(e.poll(c1)))
}

// A lock that expires makes the records available with their delivery
// count raised; once the new owner accepted them, the old owner's late
// ACCEPT lies wholly below SPSO and succeeds, changing nothing, as in
// Kafka (§1.2, ack-below-spso).
// Raw requests, so that no client fetches behind the scenario's back.
//
// sharebroker's clock is advanced past the default 30 s lock; kfake runs
// on the wall clock with 1 s locks swept every 50 ms (kfakeShortLocks),
// so m2 polls for about a second there.
func lockExpiryLateAccept(e *env) {
	s := newRawShare(e)
	e.heartbeat(group, &member{id: "m2"}, []string{"t"})
	p0 := []sharePart{{partition: 0}}
	e.note("m1 acquired", acquired(s.fetch("m1", 0, p0, nil), 0))
	e.note("m2 acquired before expiry", acquired(s.fetch("m2", 0, p0, nil), 0))
	e.srv.advance(30 * time.Second)
	epoch := int32(1)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := acquired(s.fetch("m2", epoch, p0, nil), 0)
		epoch++
		if got != "[]" && got != absent {
			e.note("m2 acquired after expiry", got)
			break
		}
		select {
		case <-tick.C:
		case <-e.ctx.Done():
			e.t.Fatal("the lock never expired")
		}
	}
	e.note("m2 accepts", ackCode(s.ack("m2", epoch, []ackBatch{{0, 2, []int8{1}}})))
	e.note("m1 late accept", ackCode(s.ack("m1", 1, []ackBatch{{0, 2, []int8{1}}})))
}

// Two members subscribed to topics a and b, one partition each. Kafka
// pools the partitions of homogeneous subscriptions: one each (§4.4).
func pooledAssignment(e *env) {
	e.createTopic("a", 1)
	e.createTopic("b", 1)
	topics := []string{"a", "b"}
	m1, m2 := &member{id: "member-1"}, &member{id: "member-2"}
	r := e.heartbeat(group, m1, topics)
	e.note("m1 join", fmt.Sprintf("%s epoch %d partitions %d", codeName(r.ErrorCode), r.MemberEpoch, assignedCount(r)))
	r = e.heartbeat(group, m2, topics)
	e.note("m2 join", fmt.Sprintf("%s epoch %d", codeName(r.ErrorCode), r.MemberEpoch))
	e.note("m2 partitions", assignedCount(r))
	r = e.heartbeat(group, m1, nil)
	e.note("m1 next heartbeat", fmt.Sprintf("%s epoch %d", codeName(r.ErrorCode), r.MemberEpoch))
	e.note("m1 partitions", assignedCount(r))
}

// ShareGroupDescribe of a group with two members on a one-partition topic,
// and of an unknown group.
func describeFields(e *env) {
	e.createTopic("a", 1)
	m1, m2 := &member{id: "member-1"}, &member{id: "member-2"}
	e.heartbeat(group, m1, []string{"a"})
	e.heartbeat(group, m2, []string{"a"})
	e.heartbeat(group, m1, nil)
	d := e.describe(group)
	e.note("error", codeName(d.ErrorCode))
	e.note("state", d.GroupState)
	e.note("group epoch", d.GroupEpoch)
	e.note("assignment epoch", d.AssignmentEpoch)
	e.note("assignor", d.Assignor)
	e.note("authorized operations", d.AuthorizedOperations)
	e.note("members", len(d.Members))
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].MemberID < d.Members[j].MemberID })
	for _, m := range d.Members {
		k := m.MemberID + " "
		e.note(k+"epoch", m.MemberEpoch)
		e.note(k+"client id", m.ClientID)
		// kfake reports the client's port, which changes from run to run.
		host := m.ClientHost
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h + ":<port>"
		}
		e.note(k+"client host", host)
		rack := "null"
		if m.RackID != nil {
			rack = *m.RackID
		}
		e.note(k+"rack", rack)
		e.note(k+"subscribed", sortedStrings(m.SubscribedTopicNames))
		var as []string
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				as = append(as, fmt.Sprintf("%s/%d", tp.Topic, p))
			}
		}
		e.note(k+"assignment", sortedStrings(as))
	}
	e.note("unknown group", codeName(e.describe("nobody").ErrorCode))
}

// ListGroups with type and state filters, one share group with a member.
func listGroupsTypeFilter(e *env) {
	e.createTopic("a", 1)
	e.heartbeat(group, &member{id: "member-1"}, []string{"a"})
	e.note("no filter", e.listGroups(nil, nil))
	e.note("type share", e.listGroups(nil, []string{"share"}))
	e.note("type SHARE", e.listGroups(nil, []string{"SHARE"}))
	e.note("type consumer", e.listGroups(nil, []string{"consumer"}))
	e.note("type classic", e.listGroups(nil, []string{"classic"}))
	e.note("type unknown", e.listGroups(nil, []string{"nonsense"}))
	e.note("state stable", e.listGroups([]string{"stable"}, nil))
	e.note("state empty", e.listGroups([]string{"Empty"}, nil))
}

// DeleteGroups of a share group with a member, then of the group once the
// member has left (§5.4).
func deleteGroups(e *env) {
	e.createTopic("a", 1)
	m := &member{id: "member-1"}
	e.heartbeat(group, m, []string{"a"})
	e.note("delete with a member", e.deleteGroup(group))
	m.epoch = -1
	r := e.heartbeat(group, m, nil)
	e.note("leave", fmt.Sprintf("%s epoch %d", codeName(r.ErrorCode), r.MemberEpoch))
	d := e.describe(group)
	e.note("describe after leave", strings.TrimSpace(codeName(d.ErrorCode)+" "+d.GroupState))
	e.note("list after leave", e.listGroups(nil, nil))
	e.note("delete when empty", e.deleteGroup(group))
	e.note("describe after delete", codeName(e.describe(group).ErrorCode))
	e.note("delete again", e.deleteGroup(group))
}

// newRawShare prepares topic "t" with two partitions, three records (one
// batch each) in partition 0, and member m1 of group in the group, as a
// client's first heartbeat would leave it.
func newRawShare(e *env) *rawShare {
	e.t.Helper()
	e.createTopic("t", 2)
	e.setGroupConfig(group, "share.auto.offset.reset", "earliest")
	e.produce("t", "v0", "v1", "v2")
	if r := e.heartbeat(group, &member{id: "m1"}, []string{"t"}); r.ErrorCode != 0 {
		e.t.Fatalf("heartbeat: %s", codeName(r.ErrorCode))
	}
	return &rawShare{e: e, group: group, topicID: e.topicID("t")}
}

// §8 item 8: MaxRecords 0 acquires nothing in Kafka.
func fetchMaxRecordsZero(e *env) {
	s := newRawShare(e)
	resp := s.fetch("m1", 0, []sharePart{{partition: 0}}, func(r *kmsg.ShareFetchRequest) { r.MaxRecords = 0 })
	e.note("top level", codeName(resp.ErrorCode))
	e.note("acquired", acquired(resp, 0))
}

// §8 item 10: a renew fetch (IsRenewAck) that also names a partition
// without acknowledgement batches, here one newly added to the session.
func renewFetchPartitionWithoutAcks(e *env) {
	s := newRawShare(e)
	open := s.fetch("m1", 0, []sharePart{{partition: 0}}, nil)
	e.note("open acquired", acquired(open, 0))
	resp := s.fetch("m1", 1, []sharePart{
		{partition: 0, acks: []ackBatch{{0, 2, []int8{4}}}},
		{partition: 1},
	}, func(r *kmsg.ShareFetchRequest) {
		r.IsRenewAck = true
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords = 0, 0, 0, 0
	})
	e.note("renew top level", codeName(resp.ErrorCode))
	if p, ok := fetchPart(resp, 0); ok {
		e.note("renew partition 0 ack", codeName(p.AcknowledgeErrorCode))
	} else {
		e.note("renew partition 0 ack", absent)
	}
}

// §8 item 11: two acknowledgement batches where the second starts at the
// previous one's last offset. Kafka's request validation rejects only
// FirstOffset < previous LastOffset; the share partition then finds offset
// 1 already acknowledged.
func adjacentAckBatches(e *env) {
	s := newRawShare(e)
	e.note("open acquired", acquired(s.fetch("m1", 0, []sharePart{{partition: 0}}, nil), 0))
	r := s.ack("m1", 1, []ackBatch{{0, 1, []int8{1}}, {1, 2, []int8{1}}})
	e.note("overlapping by one offset", ackCode(r))
	r = s.ack("m1", 2, []ackBatch{{0, 0, []int8{1}}, {1, 2, []int8{1}}})
	e.note("then disjoint", ackCode(r))
}

// An acknowledgement batch wholly below SPSO (§1.2, ack-below-spso): once
// a wrongly pinned difference, now both peers answer as Kafka.
func ackBelowSPSO(e *env) {
	s := newRawShare(e)
	e.note("open acquired", acquired(s.fetch("m1", 0, []sharePart{{partition: 0}}, nil), 0))
	e.note("accept 0-2", ackCode(s.ack("m1", 1, []ackBatch{{0, 2, []int8{1}}})))
	e.note("accept 0 again", ackCode(s.ack("m1", 2, []ackBatch{{0, 0, []int8{1}}})))
}

// §8 item 15: AcquisitionLockTimeoutMs on a top-level error.
func topLevelErrorLockTimeout(e *env) {
	s := newRawShare(e)
	resp := s.fetch("", 0, []sharePart{{partition: 0}}, nil)
	e.note("empty member id", codeName(resp.ErrorCode))
	e.note("empty member id lock timeout", resp.AcquisitionLockTimeoutMillis)
	resp = s.fetch("nobody", 5, []sharePart{{partition: 0}}, nil)
	e.note("no session", codeName(resp.ErrorCode))
	e.note("no session lock timeout", resp.AcquisitionLockTimeoutMillis)
	resp = s.fetch("m1", 0, []sharePart{{partition: 0}}, nil)
	e.note("success lock timeout", resp.AcquisitionLockTimeoutMillis)
}

// §8 item 16 and "Found by testing": the share APIs' version ranges and
// the share.version feature.
func apiVersions(e *env) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "conformance", "1"
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil || resp.ErrorCode != 0 {
		e.t.Fatalf("api versions: %v %+v", err, resp)
	}
	for _, key := range []int16{76, 77, 78, 79} {
		e.note(fmt.Sprintf("key %d %s", key, kmsg.NameForKey(key)), apiRange(resp, key))
	}
	supported, finalized := "none", "none"
	for _, f := range resp.SupportedFeatures {
		if f.Name == "share.version" {
			supported = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "share.version" {
			finalized = fmt.Sprintf("%d-%d", f.MinVersionLevel, f.MaxVersionLevel)
		}
	}
	e.note("share.version supported", supported)
	e.note("share.version finalized", finalized)
}

// §8 item 22: JoinGroup (classic protocol) naming a share group.
func joinGroupOnShareGroup(e *env) {
	e.createTopic("a", 1)
	e.heartbeat(group, &member{id: "member-1"}, []string{"a"})
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, 45000, 60000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0}
	req.Protocols = append(req.Protocols, p)
	resp, failure := rawRequest(e.t, e.srv.addr(), req)
	if failure != "" {
		e.note("join group", failure)
		return
	}
	e.note("join group", codeName(resp.(*kmsg.JoinGroupResponse).ErrorCode))
}

// Closing a consumer releases what it holds; the attempt counts, so the
// next member gets the record with delivery count 2 (§1.2 row 8; §8 item 3
// is no longer a difference).
func closeReleases(e *env) {
	e.shareSetup(queue)
	e.produce(queue, "r0")
	c1, _ := e.consumer(queue, group, 10)
	e.note("c1 polled", printRecords(e.poll(c1)))
	e.closeConsumer(c1)
	c2, _ := e.consumer(queue, group, 10)
	e.note("c2 polled after c1 closed", printRecords(e.poll(c2)))
}

// §8 item 4: a member that leaves by heartbeat keeps its records locked
// in Kafka until its share session closes or the lock expires; another
// member fetching meanwhile acquires nothing.
func leaveKeepsRecords(e *env) {
	s := newRawShare(e)
	m2 := &member{id: "m2"}
	e.heartbeat(group, m2, []string{"t"})
	e.note("m1 acquired", acquired(s.fetch("m1", 0, []sharePart{{partition: 0}}, nil), 0))
	m1 := &member{id: "m1", epoch: -1}
	r := e.heartbeat(group, m1, nil)
	e.note("m1 leaves", codeName(r.ErrorCode))
	e.note("m2 acquired", acquired(s.fetch("m2", 0, []sharePart{{partition: 0}}, nil), 0))
}

// §8 item 12: ShareAcknowledge naming a group that does not exist. Kafka
// checks only the share session.
func ackUnknownShareGroup(e *env) {
	s := newRawShare(e)
	s.group = "nobody"
	e.note("ack", ackCode(s.ack("m1", 1, []ackBatch{{0, 0, []int8{1}}})))
}

// §8 item 18 and §4.2: a member whose epoch moved twice since it joined
// is fenced when it sends epoch 0 again.
func rejoinEpochZero(e *env) {
	e.createTopic("a", 1)
	m1, m2 := &member{id: "member-1"}, &member{id: "member-2"}
	e.heartbeat(group, m1, []string{"a"})
	e.heartbeat(group, m2, []string{"a"})
	r := e.heartbeat(group, m1, nil)
	e.note("m1 epoch", r.MemberEpoch)
	m1.epoch = 0
	r = e.heartbeat(group, m1, []string{"a"})
	e.note("m1 rejoins with epoch 0", codeName(r.ErrorCode))
}

// §8 item 21: the group config share.heartbeat.interval.ms sets the
// interval a joining member is told.
func heartbeatIntervalGroupConfig(e *env) {
	e.createTopic("a", 1)
	e.setGroupConfig(group, "share.heartbeat.interval.ms", "7000")
	r := e.heartbeat(group, &member{id: "member-1"}, []string{"a"})
	e.note("join", codeName(r.ErrorCode))
	e.note("heartbeat interval", r.HeartbeatIntervalMillis)
}
