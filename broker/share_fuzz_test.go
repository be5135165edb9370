package broker

import (
	"bytes"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

// fuzzBroker is a broker that is never started: handlers are called
// directly, on a manual clock, with one topic "t" of two partitions holding
// a few records, and group "g" reading from the earliest.
func fuzzBroker(t testing.TB) (*Broker, *conn, storage.TopicID) {
	t.Helper()
	return fuzzBrokerWith(t, nil)
}

// fuzzBrokerWith is fuzzBroker with Kafka property overrides. Its member IDs
// are a counter rather than random UUIDs, so a fuzz input can name the
// member a JoinGroup made ("<client ID>-1" for the first).
func fuzzBrokerWith(t testing.TB, props map[string]string) (*Broker, *conn, storage.TopicID) {
	t.Helper()
	var ids atomic.Int64
	cfg := Config{Listen: "127.0.0.1:0", Clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)),
		Logger: slog.New(slog.DiscardHandler), Props: props}
	cfg.newMemberID = func() string { return strconv.FormatInt(ids.Add(1), 10) }
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := b.store.CreateTopic("t", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, p := range topic.Partitions() {
			if _, err := p.Append(batchtest.Plain(3).Build(), storage.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.groupConfigs.Replace("g", map[string]string{"share.auto.offset.reset": "earliest"}, false); err != nil {
		t.Fatal(err)
	}
	return b, &conn{b: b, nc: fuzzNetConn{}, log: b.log}, topic.ID
}

// fuzzNetConn is the connection of fuzzBroker's conn: handlers only ask it
// for the client's address (group member descriptions).
type fuzzNetConn struct{ net.Conn }

func (fuzzNetConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 50000}
}

// fuzzTopicID stands for topic "t" in seeds: topic IDs are random, so a
// seed built before the broker of an input exists cannot know the real
// one. withTopicID swaps it in; an ID is 16 bytes in every encoding, so
// the swap keeps the body well formed.
var fuzzTopicID = storage.TopicID{'f', 'u', 'z', 'z', '-', 't', 'o', 'p', 'i', 'c', '-', 'i', 'd', '-', 't', '!'}

func withTopicID(body []byte, id storage.TopicID) []byte {
	return bytes.ReplaceAll(body, fuzzTopicID[:], id[:])
}

// checkShareInvariants fails if any share group or share partition broke an
// invariant (group.ShareGroups.CheckInvariants,
// sharepartition.SharePartition.CheckInvariants).
func checkShareInvariants(t *testing.T, b *Broker) {
	t.Helper()
	if err := b.shareGroups.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	for _, p := range b.shareServing.All() {
		if err := p.Part.Share.CheckInvariants(); err != nil {
			t.Fatalf("share partition %+v: %v", p.Key, err)
		}
	}
}

// fuzzShareRequest decodes body as the request at version and runs it
// through the handler, never waiting: MaxWaitMs is forced to 0. Seeds name
// topic "t" by fuzzTopicID.
func fuzzShareRequest(t *testing.T, b *Broker, c *conn, key, version int16, body []byte) {
	req, err := wire.DecodeBody(wire.Header{APIKey: key, APIVersion: version}, withTopicID(body, b.store.Topic("t").ID))
	if err != nil {
		return // undecodable bodies close the connection before any handler
	}
	if sf, ok := req.(*kmsg.ShareFetchRequest); ok {
		sf.MaxWaitMillis = 0
	}
	a := lookupAPI(key)
	resp, err := a.handle(b, &request{conn: c, header: wire.Header{APIKey: key, APIVersion: version}, body: req})
	if err != nil || resp == nil {
		t.Fatalf("handler returned %v, %v", resp, err)
	}
	resp.SetVersion(version)
	wire.AppendResponse(nil, 1, resp) // the answer must encode
	checkShareInvariants(t, b)
}

func shareFetchSeed(topicID storage.TopicID, epoch int32, acks bool) []byte {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m1"), epoch
	req.MaxRecords, req.BatchSize, req.MaxBytes = 5, 2, 1<<20
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = topicID
	for p := range int32(2) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		if acks {
			ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 2, []int8{1, 2, 4}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		}
		tp.Partitions = append(tp.Partitions, rp)
	}
	req.Topics = append(req.Topics, tp)
	return req.AppendTo(nil)
}

// FuzzShareFetch runs arbitrary ShareFetch bodies, v1 and v2, through the
// handler after a seeded session exists: no panic, an answer that encodes,
// and every share partition's invariants intact.
func FuzzShareFetch(f *testing.F) {
	topicID := fuzzTopicID
	f.Add(int16(2), shareFetchSeed(topicID, 0, false))
	f.Add(int16(2), shareFetchSeed(topicID, 1, true))
	f.Add(int16(1), shareFetchSeed(topicID, 1, true))
	f.Add(int16(2), shareFetchSeed(topicID, -1, true))
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		b, c, _ := fuzzBroker(t)
		// A session with acquired records, so acknowledgements can bite.
		fuzzShareRequest(t, b, c, 78, 2, shareFetchSeed(topicID, 0, false))
		fuzzShareRequest(t, b, c, 78, 1+version&1, body)
	})
}

// FuzzShareAcknowledge does the same for ShareAcknowledge.
func FuzzShareAcknowledge(f *testing.F) {
	topicID := fuzzTopicID
	seed := func(epoch int32, renew bool, types []int8) []byte {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = kmsg.StringPtr("g"), kmsg.StringPtr("m1"), epoch, renew
		tp := kmsg.NewShareAcknowledgeRequestTopic()
		tp.TopicID = topicID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, int64(len(types)-1), types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		tp.Partitions = append(tp.Partitions, rp)
		req.Topics = append(req.Topics, tp)
		return req.AppendTo(nil)
	}
	f.Add(int16(2), seed(1, false, []int8{1, 1, 1}))
	f.Add(int16(2), seed(1, true, []int8{4, 4, 4}))
	f.Add(int16(1), seed(1, false, []int8{2, 3, 0}))
	f.Add(int16(2), seed(-1, false, []int8{1}))
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		b, c, _ := fuzzBroker(t)
		fuzzShareRequest(t, b, c, 78, 2, shareFetchSeed(topicID, 0, false))
		fuzzShareRequest(t, b, c, 79, 1+version&1, body)
	})
}
