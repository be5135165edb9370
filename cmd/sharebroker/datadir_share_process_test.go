package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
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
	var sg broker.ShareGroupJSON
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
