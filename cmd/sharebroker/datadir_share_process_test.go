package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/rawconn"
)

var httpListening = regexp.MustCompile(`msg=listening listener=HTTP addr=(127\.0\.0\.1:\d+)`)

// httpAddr is the process's admin HTTP address, from its log.
func (p *brokerProc) httpAddr(t *testing.T) string {
	t.Helper()
	m := httpListening.FindStringSubmatch(p.logged())
	if m == nil {
		t.Fatalf("no HTTP listener in the log:\n%s", p.logged())
	}
	return m[1]
}

// offsetState is one offset of a share partition as GET
// /v1/share-groups/{group} shows it.
type offsetState struct {
	State string
	Count int16
}

// sharePartitionState returns the SPSO of partition 0 of topic in group
// and the state of every offset in its window, or spso -1 if it has none.
func sharePartitionState(t *testing.T, httpAddr, group, topic string) (spso int64, offs map[int64]offsetState) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/share-groups/%s", httpAddr, group))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	offs = make(map[int64]offsetState)
	if resp.StatusCode == http.StatusNotFound {
		return -1, offs
	}
	var sg httpapi.ShareGroupJSON
	if err := json.NewDecoder(resp.Body).Decode(&sg); err != nil {
		t.Fatal(err)
	}
	spso = -1
	for _, p := range sg.Partitions {
		if p.Topic != topic || p.Partition != 0 {
			continue
		}
		spso = p.SPSO
		for _, r := range p.Ranges {
			for o := max(r.FirstOffset, p.SPSO); o <= r.LastOffset; o++ {
				offs[o] = offsetState{r.State, r.DeliveryCount}
			}
		}
	}
	return spso, offs
}

// setShareGroupConfig sets one GROUP config through IncrementalAlterConfigs.
func setShareGroupConfig(t *testing.T, c *rawconn.Conn, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	if r := c.Request(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("setting %s=%s on %s: code %d", name, value, group, r.Resources[0].ErrorCode)
	}
}

// produceValues produces one record per value, each its own batch.
func produceValues(t *testing.T, ctx context.Context, addr, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
}

func shareValues(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, "v"+strconv.Itoa(i))
	}
	return out
}

// share-state-as-kafka across a SIGKILL, with a kgo share consumer:
// records it accepted or rejected are never delivered again, released
// ones come back AVAILABLE with their delivery counts, records acquired at
// the kill come back with the count of the last write (Kafka never writes
// an acquisition), and the SPSO survives.
func TestDataDirShareStateSurvivesSIGKILL(t *testing.T) {
	const topic, group = "queue", "workers"
	dir := t.TempDir()
	p := startDataDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produceValues(t, ctx, p.addr, topic, shareValues(0, 10)...)
	setShareGroupConfig(t, rawconn.Dial(t, p.addr), group, "share.auto.offset.reset", "earliest")

	// A kgo member accepts v0-v3, rejects v4-v5 and releases v6-v9 on
	// their first delivery; what else it fetches before it closes it
	// releases too.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.ShareMaxRecords(10))
	if err != nil {
		t.Fatal(err)
	}
	firsts := make(map[string]bool)
	for len(firsts) < 10 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("first deliveries: %d of 10 before the deadline", len(firsts))
		}
		for _, r := range fs.Records() {
			i, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v"))
			switch {
			case r.DeliveryCount() > 1:
				r.Ack(kgo.AckRelease)
			case i < 4:
				r.Ack(kgo.AckAccept)
			case i < 6:
				r.Ack(kgo.AckReject)
			default:
				r.Ack(kgo.AckRelease)
			}
			firsts[string(r.Value)] = true
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	// Wait until nothing is ACQUIRED any more: the state as it was last
	// written.
	var spso int64
	var written map[int64]offsetState
	for {
		spso, written = sharePartitionState(t, p.httpAddr(t), group, topic)
		acquired := false
		for _, s := range written {
			acquired = acquired || s.State == "ACQUIRED"
		}
		// v0-v5 finished: the SPSO moved past them.
		if spso == 6 && !acquired {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("SPSO %d, window %v after the member closed; want SPSO 6 and nothing acquired", spso, written)
		}
	}

	// A raw member acquires what is available and five new records, and
	// the broker dies holding them.
	produceValues(t, ctx, p.addr, topic, shareValues(10, 15)...)
	c := rawconn.Dial(t, p.addr)
	md := c.Request(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}}).(*kmsg.MetadataResponse)
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.Version = 1
	fetch.GroupID, fetch.MemberID = kmsg.StringPtr(group), kmsg.StringPtr("doomed")
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes, fetch.MaxRecords, fetch.BatchSize = 0, 1, 1<<20, 500, 500
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = md.Topics[0].TopicID
	ft.Partitions = []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
	fetch.Topics = append(fetch.Topics, ft)
	fr := c.Request(fetch).(*kmsg.ShareFetchResponse)
	if n := len(fr.Topics); n != 1 || len(fr.Topics[0].Partitions[0].AcquiredRecords) == 0 {
		t.Fatalf("the raw member acquired nothing: %+v", fr)
	}
	_, held := sharePartitionState(t, p.httpAddr(t), group, topic)
	for o := int64(10); o < 15; o++ {
		if held[o].State != "ACQUIRED" {
			t.Fatalf("offset %d is %+v before the kill; want ACQUIRED", o, held[o])
		}
	}
	p.kill(t)

	p2 := startDataDir(t, dir)
	spso2, back := sharePartitionState(t, p2.httpAddr(t), group, topic)
	if spso2 != spso {
		t.Fatalf("SPSO %d after SIGKILL; it was %d", spso2, spso)
	}
	for o, s := range written {
		if back[o] != s {
			t.Errorf("offset %d after SIGKILL is %+v; it was written as %+v", o, back[o], s)
		}
	}
	for o := int64(10); o < 15; o++ {
		if s, ok := back[o]; ok && s != (offsetState{"AVAILABLE", 0}) {
			t.Errorf("offset %d, first acquired at the kill, came back %+v; want AVAILABLE with count 0", o, s)
		}
	}

	// A new member gets every record not finished, each once, with the
	// next delivery count, and never an accepted or rejected one.
	want := make(map[string]int32)
	for o := spso; o < 15; o++ {
		s := written[o]
		if s.State == "ACKNOWLEDGED" || s.State == "ARCHIVED" {
			continue
		}
		want["v"+strconv.FormatInt(o, 10)] = int32(s.Count) + 1
	}
	cl2, err := kgo.NewClient(kgo.SeedBrokers(p2.addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	got := make(map[string]int32)
	for len(got) < len(want) {
		fs := cl2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after SIGKILL got %v before the deadline; want %v", got, want)
		}
		for _, r := range fs.Records() {
			v := string(r.Value)
			if _, dup := got[v]; dup || want[v] == 0 {
				t.Fatalf("%s delivered after SIGKILL (count %d); it was finished or already delivered (%v)", v, r.DeliveryCount(), got)
			}
			got[v] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	for v, n := range want {
		if got[v] != n {
			t.Errorf("%s delivered with count %d after SIGKILL; want %d", v, got[v], n)
		}
	}
}

const soakShareGroup = "soak-share"

// shareSoak is the share-group part of the crash soak: what the share
// group was handed and which acceptances the broker confirmed.
type shareSoak struct {
	mu          sync.Mutex
	delivered   map[string]bool
	accepted    map[string]bool // acceptance confirmed: never to be delivered again
	redelivered []string        // accepted records delivered again: the failure
	ackErrs     int             // errors the ack callback has seen
}

func newShareSoak() *shareSoak {
	return &shareSoak{delivered: make(map[string]bool), accepted: make(map[string]bool)}
}

func (s *shareSoak) onAcks(_ *kgo.Client, results kgo.ShareAckResults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range results {
		if r.Err != nil {
			s.ackErrs++
		}
	}
}

// handle records one poll's records, accepts them and flushes; only a
// flush without an error confirms the acceptances.
func (s *shareSoak) handle(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	s.mu.Lock()
	for _, r := range recs {
		v := string(r.Value)
		if s.accepted[v] {
			s.redelivered = append(s.redelivered, fmt.Sprintf("%s (count %d)", v, r.DeliveryCount()))
		}
		s.delivered[v] = true
	}
	errsBefore := s.ackErrs
	s.mu.Unlock()
	for _, r := range recs {
		r.Ack(kgo.AckAccept)
	}
	err := cl.FlushAcks(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.ackErrs != errsBefore {
		return fmt.Errorf("acceptance not confirmed: %v", err)
	}
	for _, r := range recs {
		s.accepted[string(r.Value)] = true
	}
	return nil
}

// consume runs a share consumer on addr until ctx ends; done closes after
// its last poll.
func (s *shareSoak) consume(t *testing.T, ctx context.Context, addr string) (*kgo.Client, <-chan struct{}) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("soak"), kgo.ShareGroup(soakShareGroup),
		kgo.FetchMaxWait(50*time.Millisecond), kgo.ShareAckCallback(s.onAcks))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if recs := cl.PollFetches(ctx).Records(); len(recs) > 0 {
				_ = s.handle(ctx, cl, recs) // a kill mid-flush leaves them unconfirmed
			}
		}
	}()
	return cl, done
}

// check fails the test if an accepted record came again.
func (s *shareSoak) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.redelivered) > 0 {
		t.Fatalf("records delivered again after their acceptance was confirmed: %v", s.redelivered)
	}
}

func (s *shareSoak) confirmed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepted)
}

// drain share-consumes until the share group has finished every record of
// the topic, then checks that every acknowledged record was delivered to
// it and no accepted one twice.
func (s *shareSoak) drain(t *testing.T, ctx context.Context, addr string, acked map[int64]string) {
	t.Helper()
	cl, done := s.consume(t, ctx, addr)
	defer func() { <-done; cl.Close() }()
	c := rawconn.Dial(t, addr)
	_, hw := rawLog(t, addr, "soak")
	for {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = soakShareGroup
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "soak", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, g)
		resp := c.Request(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		if p := resp.Groups[0].Topics[0].Partitions[0]; p.StartOffset == hw {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the share group did not finish the topic (high watermark %d) before the deadline", hw)
		}
		s.check(t)
	}
	s.check(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	for off, v := range acked {
		if !s.delivered[v] {
			t.Fatalf("offset %d (%s) was acknowledged to the producer but never delivered to the share group", off, v)
		}
	}
}

// txn-state-kept across a SIGKILL: a kgo transaction open when the broker
// dies is still open after the restart — read_committed sees nothing of
// it, the last stable offset stays below its records — and is aborted by
// its timeout (2 s here), never half visible; a transaction committed
// before the kill stays visible.
func TestDataDirOpenTransactionSurvivesSIGKILL(t *testing.T) {
	const topic = "txq"
	dir := t.TempDir()
	cleanup := []string{"--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100"}
	p := startDataDir(t, dir, cleanup...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.TransactionalID("tx-kill"), kgo.TransactionTimeout(2*time.Second), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txn := func(value string, commit bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	txn("committed", true) // offset 0, marker 1
	txn("open", false)     // offset 2, no marker
	p.kill(t)

	p2 := startDataDir(t, dir, cleanup...)
	lso := func() (int64, int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(7)
		req.IsolationLevel = 1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		got := rawconn.Dial(t, p2.addr).Request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
		_, hw := rawLog(t, p2.addr, topic)
		return got, hw
	}
	if stable, hw := lso(); stable != 2 || hw != 3 {
		// Either the timeout already ran (2 s is short on a loaded
		// machine), or recovery aborted the transaction: only the first
		// is allowed.
		if !(stable == 4 && hw == 4) {
			t.Fatalf("after SIGKILL: last stable offset %d, high watermark %d; want 2 and 3 (the transaction still open)", stable, hw)
		}
		t.Log("the transaction timed out before the first look")
	}
	for {
		if stable, hw := lso(); stable == 4 && hw == 4 {
			break // the ABORT marker at 3
		}
		if ctx.Err() != nil {
			t.Fatal("the open transaction was not aborted on its timeout")
		}
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(p2.addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []string
	for len(got) == 0 {
		fs := rc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("nothing read_committed before the deadline")
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 1 || got[0] != "committed" {
		t.Fatalf("read_committed after the abort: %q; want only the committed record", got)
	}
}
