package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/sharetest"
	"github.com/sharebroker/sharebroker/internal/testadmin"
)

// env is one scenario's view of one running peer.
type env struct {
	t   *testing.T
	ctx context.Context
	srv server
	cl  *kgo.Client // admin, producer and raw requests
	tr  *transcript
}

func newEnv(t *testing.T, p peer, o peerOpts) *env {
	t.Helper()
	srv := p.start(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &env{t: t, ctx: ctx, srv: srv, cl: cl, tr: &transcript{}}
}

func (e *env) note(key string, value any) { e.tr.note(key, value) }

// createTopic creates topic with n partitions.
func (e *env) createTopic(topic string, n int32) {
	e.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, n, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("create topic %s: %v %+v", topic, err, resp)
	}
}

// setGroupConfig sets one GROUP config.
func (e *env) setGroupConfig(group, name, value string) {
	e.t.Helper()
	testadmin.SetGroupConfig(e.t, e.ctx, e.cl, group, name, value)
}

// produce appends one record per value to partition 0 of topic, one batch
// each, in order.
func (e *env) produce(topic string, values ...string) {
	e.t.Helper()
	for _, v := range values {
		if err := e.cl.ProduceSync(e.ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			e.t.Fatalf("produce %s: %v", v, err)
		}
	}
}

func (e *env) topicID(topic string) [16]byte {
	e.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("metadata %s: %v %+v", topic, err, resp)
	}
	return resp.Topics[0].TopicID
}

// ackLog collects the outcomes a consumer's acknowledgement callback sees.
type ackLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *ackLog) callback(_ *kgo.Client, results kgo.ShareAckResults) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range results {
		l.errs = append(l.errs, r.Err)
	}
}

// take returns the outcomes since the last take, printed.
func (l *ackLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, err := range l.errs {
		out = append(out, errName(err))
	}
	l.errs = nil
	return strings.Join(out, ",")
}

// consumer is a kgo share consumer of topic in group that fetches only
// inside a poll (ShareMaxRecordsStrict), at most maxRecords at a time.
func (e *env) consumer(topic, group string, maxRecords int32) (*kgo.Client, *ackLog) {
	e.t.Helper()
	acks := &ackLog{}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.srv.addr()),
		kgo.ConsumeTopics(topic),
		kgo.ShareGroup(group),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.ShareMaxRecords(maxRecords),
		kgo.ShareMaxRecordsStrict(),
		kgo.ShareAckCallback(acks.callback),
	)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.closeConsumer(cl) })
	return cl, acks
}

const fetchMaxWait = 200 * time.Millisecond

// whileClientWaits runs f, which blocks in a kgo share consumer, and lets
// the broker's time pass while it does.
//
// kgo keeps one ShareFetch in flight after a poll returns, and a flush or
// close waits for it. The broker parks that fetch until MaxWait on its own
// clock, and sharebroker's manual clock moves only when told. So while f
// runs, the clock is advanced by the fetch MaxWait every 10 ms, as real
// time would pass for a real broker. Locks last 30 s, so a call must block
// for 1.5 s of real time before this could expire one; on kfake advance
// does nothing and the wait ends in real time.
func (e *env) whileClientWaits(what string, f func()) {
	e.t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			e.srv.advance(fetchMaxWait)
		case <-deadline.C:
			e.t.Fatalf("%s did not finish in 10 s", what)
		}
	}
}

func (e *env) closeConsumer(cl *kgo.Client) {
	e.whileClientWaits("consumer close", cl.Close)
}

// poll returns the next non-empty batch of records cl is handed, bounded by
// the scenario's deadline.
func (e *env) poll(cl *kgo.Client) []*kgo.Record {
	e.t.Helper()
	var recs []*kgo.Record
	e.whileClientWaits("poll", func() {
		for e.ctx.Err() == nil && len(recs) == 0 {
			recs = cl.PollFetches(e.ctx).Records()
		}
	})
	if len(recs) == 0 {
		e.t.Fatal("no records before the deadline")
	}
	return recs
}

func (e *env) flush(cl *kgo.Client) {
	e.t.Helper()
	var err error
	e.whileClientWaits("flush", func() { err = cl.FlushAcks(e.ctx) })
	if err != nil {
		e.t.Fatalf("flush acks: %v", err)
	}
}

// printRecords prints records as value@deliveryCount.
func printRecords(recs []*kgo.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s@%d", r.Value, r.DeliveryCount()))
	}
	return strings.Join(out, ",")
}

type member struct {
	id    string
	epoch int32
}

// heartbeat sends one ShareGroupHeartbeat for m and tracks its epoch.
func (e *env) heartbeat(group string, m *member, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	e.t.Helper()
	return sharetest.Heartbeat(e.t, e.ctx, e.cl, group, m.id, &m.epoch, topics)
}

var assignedCount = testadmin.AssignedCount

func (e *env) describe(group string) kmsg.ShareGroupDescribeResponseGroup {
	e.t.Helper()
	return testadmin.DescribeShareGroup(e.t, e.ctx, e.cl, group)
}

// listGroups prints ListGroups' answer as group/protocolType/type/state,
// sorted.
func (e *env) listGroups(states, types []string) string {
	e.t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatalf("list groups: %v", err)
	}
	if resp.ErrorCode != 0 {
		return codeName(resp.ErrorCode)
	}
	var out []string
	for _, g := range resp.Groups {
		out = append(out, g.Group+"/"+g.ProtocolType+"/"+g.GroupType+"/"+g.GroupState)
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

func (e *env) deleteGroup(group string) string {
	e.t.Helper()
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil || len(resp.Groups) != 1 {
		e.t.Fatalf("delete groups: %v %+v", err, resp)
	}
	return codeName(resp.Groups[0].ErrorCode)
}

// apiRange prints the versions a broker advertises for key, or "none".
func apiRange(resp *kmsg.ApiVersionsResponse, key int16) string {
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return fmt.Sprintf("v%d-v%d", k.MinVersion, k.MaxVersion)
		}
	}
	return "none"
}

// rawShare speaks ShareFetch and ShareAcknowledge by hand for the paths no
// client library takes.
type rawShare struct {
	e       *env
	group   string
	topicID [16]byte
}

// ackBatch is an acknowledgement batch, written {first, last, types}.
type ackBatch sharetest.AckBatch

// sharePart names one partition of the raw topic in a request, with its
// acknowledgement batches.
type sharePart struct {
	partition int32
	acks      []ackBatch
}

// fetch sends a ShareFetch with no wait for the given partitions; edit may
// change anything before it is sent.
func (s *rawShare) fetch(member string, epoch int32, parts []sharePart, edit func(*kmsg.ShareFetchRequest)) *kmsg.ShareFetchResponse {
	s.e.t.Helper()
	ps := make([]sharetest.Part, 0, len(parts))
	for _, sp := range parts {
		ps = append(ps, sharetest.Part{Partition: sp.partition, MaxBytes: 1 << 20, Acks: sharetest.Batches(sp.acks)})
	}
	req := sharetest.FetchRequest(s.group, member, epoch, s.topicID, ps...)
	if edit != nil {
		edit(req)
	}
	resp, err := req.RequestWith(s.e.ctx, s.e.cl)
	if err != nil {
		s.e.t.Fatalf("share fetch: %v", err)
	}
	return resp
}

// ack sends a ShareAcknowledge for partition 0.
func (s *rawShare) ack(member string, epoch int32, acks []ackBatch) *kmsg.ShareAcknowledgeResponse {
	s.e.t.Helper()
	req := sharetest.AckRequest(s.group, member, epoch, s.topicID, sharetest.Batches(acks))
	resp, err := req.RequestWith(s.e.ctx, s.e.cl)
	if err != nil {
		s.e.t.Fatalf("share acknowledge: %v", err)
	}
	return resp
}

// fetchPart returns the answer for partition p, if any.
func fetchPart(resp *kmsg.ShareFetchResponse, p int32) (kmsg.ShareFetchResponseTopicPartition, bool) {
	for _, tp := range resp.Topics {
		for _, rp := range tp.Partitions {
			if rp.Partition == p {
				return rp, true
			}
		}
	}
	return kmsg.ShareFetchResponseTopicPartition{}, false
}

// acquired prints a partition's acquired ranges as first-last@count.
func acquired(resp *kmsg.ShareFetchResponse, p int32) string {
	rp, ok := fetchPart(resp, p)
	if !ok {
		return absent
	}
	var out []string
	for _, a := range rp.AcquiredRecords {
		out = append(out, fmt.Sprintf("%d-%d@%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// ackCode prints the acknowledgement outcome of partition 0 in a
// ShareAcknowledge response.
func ackCode(resp *kmsg.ShareAcknowledgeResponse) string {
	if resp.ErrorCode != 0 {
		return "top-level " + codeName(resp.ErrorCode)
	}
	for _, tp := range resp.Topics {
		for _, rp := range tp.Partitions {
			return codeName(rp.ErrorCode)
		}
	}
	return absent
}

// sortedStrings prints a copy of ss, sorted.
func sortedStrings(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return "[" + strings.Join(ss, " ") + "]"
}
