package sharebrokertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// Record stories end to end (docs/share-groups.md record-story): real
// clients over loopback sockets, the broker on the manual clock, the story
// read through the HTTP API.

// storyEnv is a started broker with topic "jobs" (one partition), share
// group "g" reading it from the earliest offset, and a kgo client for
// producing and for raw share requests.
type storyEnv struct {
	t       *testing.T
	ctx     context.Context
	b       *sharebrokertest.Broker
	admin   *kgo.Client
	topicID [16]byte
}

func newStoryEnv(t *testing.T, opts ...sharebrokertest.Option) *storyEnv {
	t.Helper()
	opts = append([]sharebrokertest.Option{sharebrokertest.WithHTTP(), sharebrokertest.WithProperty("num.partitions", "1")}, opts...)
	e := &storyEnv{t: t, b: sharebrokertest.Start(t, opts...)}
	e.attach()
	return e
}

// attach connects e's client to its broker, sets the group's start to the
// earliest offset and produces job-0 to jobs.
func (e *storyEnv) attach() {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("jobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	e.ctx, e.admin = ctx, admin
	e.groupConfig("share.auto.offset.reset", "earliest")
	e.produce("job-0")
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("jobs")
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(ctx, admin)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	e.topicID = resp.Topics[0].TopicID
}

func (e *storyEnv) groupConfig(name, value string) {
	e.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(e.ctx, e.admin)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		e.t.Fatalf("set %s: %v %+v", name, err, resp)
	}
}

func (e *storyEnv) produce(values ...string) {
	e.t.Helper()
	for _, v := range values {
		if err := e.admin.ProduceSync(e.ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// shareFetch sends member's ShareFetch at epoch through cl to node (-1:
// any), acquiring up to 10 records without waiting, and returns the
// partition's answer.
func (e *storyEnv) shareFetch(cl *kgo.Client, node int32, member string, epoch int32) kmsg.ShareFetchResponseTopicPartition {
	e.t.Helper()
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr(member), epoch
	sf.MaxRecords, sf.BatchSize, sf.MaxBytes = 10, 10, 1<<20
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = e.topicID
	tp.Partitions = append(tp.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	sf.Topics = append(sf.Topics, tp)
	var resp *kmsg.ShareFetchResponse
	var err error
	if node < 0 {
		resp, err = sf.RequestWith(e.ctx, cl)
	} else {
		var r kmsg.Response
		r, err = cl.Broker(int(node)).Request(e.ctx, sf)
		resp, _ = r.(*kmsg.ShareFetchResponse)
	}
	if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		e.t.Fatalf("share fetch of %s at epoch %d: %v %+v", member, epoch, err, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// acknowledge sends member's ShareAcknowledge at epoch of offsets
// first..last with one type.
func (e *storyEnv) acknowledge(member string, epoch int32, first, last int64, typ int8) {
	e.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr(member), epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = e.topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = first, last, []int8{typ}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	req.Topics = append(req.Topics, at)
	resp, err := req.RequestWith(e.ctx, e.admin)
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		e.t.Fatalf("acknowledge %d-%d type %d: %v %+v", first, last, typ, err, resp)
	}
}

// get fetches path from the HTTP API into v and returns the status.
func (e *storyEnv) get(path string, v any) int {
	e.t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + e.b.HTTPAddr + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// story returns the record story of offset of jobs-0 over HTTP, each
// event as "event member detail".
func (e *storyEnv) story(offset int64) (httpapi.RecordStoryJSON, []string) {
	e.t.Helper()
	var st httpapi.RecordStoryJSON
	if status := e.get(fmt.Sprintf("/v1/share-groups/g/topics/jobs/partitions/0/records/%d", offset), &st); status != http.StatusOK {
		e.t.Fatalf("story of %d: status %d", offset, status)
	}
	var lines []string
	for _, ev := range st.Events {
		line := ev.Event
		for _, f := range []string{ev.Member, ev.Type, ev.Reason, ev.DLQTopic} {
			if f != "" {
				line += " " + f
			}
		}
		if ev.DeliveryCount != 0 {
			line += fmt.Sprintf(" d%d", ev.DeliveryCount)
		}
		if ev.DLQOffset != nil {
			line += fmt.Sprintf(" @%d/%d", *ev.DLQPartition, *ev.DLQOffset)
		}
		lines = append(lines, line)
	}
	return st, lines
}

func wantLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("story:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// record-story, record-story-json: over real sockets, a record acquired,
// left to expire, acquired again and rejected into the dead-letter topic
// tells exactly that over HTTP, with broker-clock times; the dead-letter
// offset it names holds that record's dead letter; the share group's
// answer lists the archive and the dead letter.
func TestRecordStoryOverHTTP(t *testing.T) {
	e := newStoryEnv(t, sharebrokertest.WithProperty("share.version", "2"))
	enable := "true"
	if _, err := kadm.NewClient(e.admin).CreateTopic(e.ctx, 1, 1,
		map[string]*string{"errors.deadletterqueue.group.enable": &enable}, "dlq.jobs"); err != nil {
		t.Fatal(err)
	}
	e.produce("job-1") // held while job-0 is rejected: the lag is 1
	// The dead letter lands at offset 1 of dlq.jobs.
	if err := e.admin.ProduceSync(e.ctx, &kgo.Record{Topic: "dlq.jobs", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.groupConfig("errors.deadletterqueue.topic.name", "dlq.jobs")

	start := e.b.Clock.Now()
	if p := e.shareFetch(e.admin, -1, "worker-1", 0); len(p.AcquiredRecords) != 1 {
		t.Fatalf("first fetch acquired %+v", p.AcquiredRecords)
	}
	e.b.Advance(30 * time.Second) // share.record.lock.duration.ms: the lock expires
	if p := e.shareFetch(e.admin, -1, "worker-1", 1); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("second fetch acquired %+v", p.AcquiredRecords)
	}
	e.b.Advance(time.Second)
	e.acknowledge("worker-1", 2, 0, 0, 3) // REJECT

	st, lines := e.story(0)
	wantLines(t, lines,
		"acquired worker-1 d1",
		"lock_expired worker-1",
		"acquired worker-1 d2",
		"acknowledged worker-1 reject",
		"archived rejected",
		"dead_lettered dlq.jobs @0/1",
	)
	times := []time.Time{start, start.Add(30 * time.Second), start.Add(30 * time.Second), start.Add(31 * time.Second)}
	for i, want := range times {
		if got, err := time.Parse(time.RFC3339Nano, st.Events[i].Time); err != nil || !got.Equal(want) {
			t.Errorf("event %d (%s) at %s; want %v", i, st.Events[i].Event, st.Events[i].Time, want)
		}
	}
	if st.Record != nil || st.Truncated || st.Now != start.Add(31*time.Second).UTC().Format(time.RFC3339Nano) {
		t.Errorf("record %+v truncated %v now %s", st.Record, st.Truncated, st.Now)
	}

	// The dead letter at the offset the story names is offset 0's.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"dlq.jobs": {0: kgo.NewOffset().At(1)}}), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var dead []*kgo.Record
	for len(dead) == 0 && e.ctx.Err() == nil {
		dead = cl.PollFetches(e.ctx).Records()
	}
	if len(dead) == 0 {
		t.Fatal("no dead letter at offset 1 before the deadline")
	}
	for _, h := range dead[0].Headers {
		if h.Key == "__dlq.errors.offset" && string(h.Value) != "0" {
			t.Fatalf("dead letter at offset %d is of offset %s", dead[0].Offset, h.Value)
		}
	}

	// The share group's answer.
	var g httpapi.ShareGroupJSON
	if status := e.get("/v1/share-groups/g", &g); status != http.StatusOK || len(g.Partitions) != 1 {
		t.Fatalf("share group: %d %+v", status, g)
	}
	p := g.Partitions[0]
	if g.Now == "" || p.Lag != 1 || len(p.Archived) != 1 || p.Archived[0].Reason != "rejected" ||
		len(p.DeadLetters) != 1 || p.DeadLetters[0] != (httpapi.DeadLetterJSON{Offset: 0, DLQTopic: "dlq.jobs", DLQPartition: 0,
		DLQOffset: 1, Time: p.DeadLetters[0].Time}) {
		t.Fatalf("share group partition: %+v now %q", p, g.Now)
	}

	// An offset nothing happened to, and a topic that does not exist.
	if st, lines := e.story(99); len(lines) != 0 || st.Record != nil {
		t.Fatalf("story of 99: %+v", st)
	}
	var refused map[string]string
	if status := e.get("/v1/share-groups/g/topics/nope/partitions/0/records/0", &refused); status != http.StatusNotFound || refused["error"] == "" {
		t.Fatalf("unknown topic: %d %v", status, refused)
	}
}

// record-story: a share session the client closes lets its records go with
// session_closed; one whose connection closes, with the reason
// connection_closed. A kgo share consumer that closes holding records it
// polled releases them itself first: their stories say released.
func TestRecordStorySessionClosed(t *testing.T) {
	e := newStoryEnv(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.ConsumeTopics("jobs"), kgo.ShareGroup("g"),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	e.pumping(func() {
		for len(recs) == 0 && e.ctx.Err() == nil {
			recs = cl.PollFetches(e.ctx).Records()
		}
	})
	if len(recs) != 1 {
		t.Fatalf("the share consumer got %d records", len(recs))
	}
	e.pumping(cl.Close)
	_, lines := e.story(0)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "acquired ") || !strings.HasPrefix(lines[1], "released ") {
		t.Fatalf("story of 0 after the kgo consumer closed:\n%s", strings.Join(lines, "\n"))
	}

	// A member that closes its share session (epoch -1) holding the record.
	if got := e.shareFetch(e.admin, -1, "worker-1", 0); len(got.AcquiredRecords) != 1 {
		t.Fatalf("worker-1 acquired %+v", got.AcquiredRecords)
	}
	e.closeSession(e.admin, "worker-1")
	_, lines = e.story(0)
	if n := len(lines); lines[n-1] != "session_closed worker-1 session_closed" {
		t.Fatalf("story of 0 after worker-1 closed its session:\n%s", strings.Join(lines, "\n"))
	}

	// A member whose connection closes holding the record.
	raw, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.shareFetch(raw, -1, "worker-2", 0); len(got.AcquiredRecords) != 1 {
		t.Fatalf("worker-2 acquired %+v", got.AcquiredRecords)
	}
	raw.Close()
	deadline := time.Now().Add(10 * time.Second) // the broker sees the close on the connection's goroutine
	for {
		_, lines = e.story(0)
		if lines[len(lines)-1] == "session_closed worker-2 connection_closed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("story of 0 after worker-2's connection closed:\n%s", strings.Join(lines, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closeSession ends member's share session with a ShareFetch at epoch -1
// naming nothing.
func (e *storyEnv) closeSession(cl *kgo.Client, member string) {
	e.t.Helper()
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr(member), -1
	sf.MaxBytes = 1 << 20
	resp, err := sf.RequestWith(e.ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		e.t.Fatalf("closing %s's session: %v %+v", member, err, resp)
	}
}

// pumping runs f while the manual clock follows real time, 1 ms per real
// millisecond: a kgo share consumer's heartbeats and fetch waits run on
// the broker clock.
func (e *storyEnv) pumping(f func()) {
	done := make(chan struct{})
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				e.b.Advance(time.Millisecond)
			}
		}
	}()
	f()
	close(done)
	<-pumped
}

// record-story: records acquired on a partition whose leader moves (the
// test API's move, three nodes) tell leader_moved; acquired again on the
// new leader, their delivery count is the one before the move.
func TestRecordStoryLeaderMoved(t *testing.T) {
	e := newStoryEnv(t, sharebrokertest.WithNodes(3))
	var cluster httpapi.ClusterJSON
	e.get("/v1/cluster", &cluster)
	leader := int32(-1)
	for _, p := range cluster.Partitions {
		if p.Topic == "jobs" && p.Partition == 0 {
			leader = p.Leader
		}
	}
	if leader < 0 {
		t.Fatalf("no leader of jobs-0 in %+v", cluster)
	}
	if got := e.shareFetch(e.admin, leader, "worker-1", 0); len(got.AcquiredRecords) != 1 {
		t.Fatalf("acquired %+v", got.AcquiredRecords)
	}
	to := (leader + 1) % 3
	if err := e.b.MoveLeader("jobs", 0, to); err != nil {
		t.Fatal(err)
	}
	if got := e.shareFetch(e.admin, to, "worker-2", 0); len(got.AcquiredRecords) != 1 || got.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("acquired on the new leader %+v", got.AcquiredRecords)
	}
	_, lines := e.story(0)
	wantLines(t, lines, "acquired worker-1 d1", "leader_moved worker-1", "acquired worker-2 d1")

	// The same story in-process, and an unknown partition's refusal.
	if st, err := e.b.RecordStory("g", "jobs", 0, 0); err != nil || len(st.Events) != 3 || st.Events[1].Event != "leader_moved" {
		t.Fatalf("in-process story: %v %+v", err, st)
	}
	if _, err := e.b.RecordStory("g", "jobs", 7, 0); !errors.Is(err, httpapi.ErrNoStory) {
		t.Fatalf("story of jobs-7: %v", err)
	}
}
