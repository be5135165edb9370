package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/sharetest"
	"github.com/sharebroker/sharebroker/locktimer"
)

// rawShare speaks ShareFetch and ShareAcknowledge by hand to one broker,
// for the validation paths no client library would take.
type rawShare struct {
	t       *testing.T
	c       *rawConn
	group   string
	topicID [16]byte
}

// newRawShare starts a broker with topic "t" (one partition) holding n
// records, one per batch, and a group "g" that reads from the earliest.
func newRawShare(t *testing.T, n int, clock ...locktimer.Clock) *rawShare {
	t.Helper()
	cfg := broker.Config{}
	if len(clock) > 0 {
		cfg.Clock = clock[0]
	}
	_, addr := startBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return &rawShare{t: t, c: dialRaw(t, addr), group: "g", topicID: seedShareTopic(t, ctx, cl, n)}
}

// seedShareTopic produces n records to "t" (cl's default topic), one per
// batch, makes group "g" read from the earliest, and returns the topic ID.
func seedShareTopic(t *testing.T, ctx context.Context, cl *kgo.Client, n int) [16]byte {
	t.Helper()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfig(t, ctx, cl, "g", "share.auto.offset.reset", "earliest")
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].TopicID
}

// ackSpec is an acknowledgement batch, written {first, last, types}.
type ackSpec sharetest.AckBatch

// fetch sends a ShareFetch for partition 0 of "t"; edit may change anything.
func (s *rawShare) fetch(version int16, member string, epoch int32, acks []ackSpec, edit func(*kmsg.ShareFetchRequest)) *kmsg.ShareFetchResponse {
	s.t.Helper()
	req := sharetest.FetchRequest(s.group, member, epoch, s.topicID, sharetest.Part{Acks: sharetest.Batches(acks)})
	req.Version = version
	if edit != nil {
		edit(req)
	}
	return s.c.request(req).(*kmsg.ShareFetchResponse)
}

// client returns a kgo client of the same broker, for admin requests such
// as group configs, with a context bounded for the test.
func (s *rawShare) client() (context.Context, *kgo.Client) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	s.t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.nc.RemoteAddr().String()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(cl.Close)
	return ctx, cl
}

// join makes member a member of the group, subscribed to topic, with a
// ShareGroupHeartbeat; raw members need not join to fetch, but then the
// group does not list them.
func (s *rawShare) join(member, topic string) {
	s.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.SubscribedTopicNames = s.group, member, []string{topic}
	if resp := s.c.request(req).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != 0 {
		s.t.Fatalf("%s joins %s: error %d", member, s.group, resp.ErrorCode)
	}
}

// ack sends a ShareAcknowledge for partition 0 of "t".
func (s *rawShare) ack(version int16, member string, epoch int32, renew bool, acks []ackSpec) *kmsg.ShareAcknowledgeResponse {
	s.t.Helper()
	req := sharetest.AckRequest(s.group, member, epoch, s.topicID, sharetest.Batches(acks))
	req.Version, req.IsRenewAck = version, renew
	return s.c.request(req).(*kmsg.ShareAcknowledgeResponse)
}

// partition returns the answer for partition 0, failing if there is none.
func partitionOf(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("want one partition, got error %d and %+v", resp.ErrorCode, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// Top-level validation of ShareFetch, share-groups.md §2.3, §2.6, §9.3.
func TestShareFetchTopLevelValidation(t *testing.T) {
	s := newRawShare(t, 3)
	cases := []struct {
		name    string
		version int16
		member  string
		epoch   int32
		acks    []ackSpec
		edit    func(*kmsg.ShareFetchRequest)
		want    *kerr.Error
	}{
		{"empty member id", 2, "", 0, nil, nil, kerr.InvalidRequest},
		{"member id over 36 characters", 2, strings.Repeat("m", 37), 0, nil, nil, kerr.InvalidRequest},
		{"null group id", 2, "m", 0, nil, func(r *kmsg.ShareFetchRequest) { r.GroupID = nil }, kerr.InvalidRequest},
		{"renew fetch with MaxWaitMs", 2, "m", 0, nil, func(r *kmsg.ShareFetchRequest) { r.IsRenewAck = true }, kerr.InvalidRequest},
		{"acquire mode 2", 2, "m", 0, nil, func(r *kmsg.ShareFetchRequest) { r.ShareAcquireMode = 2 }, kerr.InvalidRequest},
		{"acknowledgements in an opening request", 2, "m", 0, []ackSpec{{0, 0, []int8{1}}}, nil, kerr.InvalidRequest},
		{"incremental epoch without a session", 2, "nobody", 5, nil, nil, kerr.ShareSessionNotFound},
		{"closing without a session", 2, "nobody", -1, nil, nil, kerr.ShareSessionNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.fetch(tc.version, tc.member, tc.epoch, tc.acks, tc.edit)
			wantCode(t, "top level", resp.ErrorCode, tc.want)
			if resp.AcquisitionLockTimeoutMillis != 0 || len(resp.Topics) != 0 {
				t.Fatalf("a top-level error carried lock timeout %d and %d topics", resp.AcquisitionLockTimeoutMillis, len(resp.Topics))
			}
		})
	}
}

// A session's epochs (§2.4) and the acknowledgement rules (§2.5, §2.6),
// walked in order on one member's session.
func TestShareFetchSessionAndAcknowledgements(t *testing.T) {
	s := newRawShare(t, 3)
	// Open: the three records are acquired, delivery count 1.
	p := partitionOf(t, s.fetch(2, "m1", 0, nil, nil))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 2 || p.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v", p.AcquiredRecords)
	}
	if len(p.Records) == 0 {
		t.Fatal("acquired records came without their batches")
	}
	if resp := s.fetch(2, "m1", 2, nil, nil); resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 2 when 1 is expected: code %d", resp.ErrorCode)
	}

	// RENEW needs v2 and IsRenewAck; on v1, or without the flag, the
	// partition's acknowledgements fail and nothing is applied.
	v1 := s.fetch(1, "m1", 1, []ackSpec{{0, 0, []int8{4}}}, nil)
	wantCode(t, "renew on v1", partitionOf(t, v1).AcknowledgeErrorCode, kerr.InvalidRequest)
	noFlag := s.fetch(2, "m1", 2, []ackSpec{{0, 0, []int8{4}}}, nil)
	wantCode(t, "renew without IsRenewAck", partitionOf(t, noFlag).AcknowledgeErrorCode, kerr.InvalidRequest)

	// A renew fetch: zero limits, RENEW applied, no records, no wait.
	renew := s.fetch(2, "m1", 3, []ackSpec{{0, 2, []int8{4}}}, func(r *kmsg.ShareFetchRequest) {
		r.IsRenewAck = true
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords = 0, 0, 0, 0
	})
	rp := partitionOf(t, renew)
	wantCode(t, "renew fetch", rp.AcknowledgeErrorCode, nil)
	if len(rp.Records) != 0 || len(rp.AcquiredRecords) != 0 {
		t.Fatalf("a renew fetch returned %d record bytes and %v", len(rp.Records), rp.AcquiredRecords)
	}
	if renew.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d, want the default 30000", renew.AcquisitionLockTimeoutMillis)
	}

	// Another member cannot acknowledge m1's records.
	other := s.fetch(2, "m2", 0, nil, nil)
	if op := partitionOf(t, other); len(op.AcquiredRecords) != 0 {
		t.Fatalf("m2 acquired %v while m1 holds everything", op.AcquiredRecords)
	}
	wantCode(t, "accept of another member's records",
		partitionOf(t, s.fetch(2, "m2", 1, []ackSpec{{0, 2, []int8{1}}}, nil)).AcknowledgeErrorCode, kerr.InvalidRecordState)

	// Accept all three: SPSO moves past them, so a later ack of offset 0
	// lies wholly below SPSO and succeeds without changing anything
	// (share-groups.md §1.2, ack-below-spso; Kafka's SharePartition.acknowledge
	// skips such a batch).
	accept := s.ack(2, "m1", 4, false, []ackSpec{{0, 2, []int8{1}}})
	wantCode(t, "accept", accept.Topics[0].Partitions[0].ErrorCode, nil)
	late := s.ack(2, "m1", 5, false, []ackSpec{{0, 0, []int8{1}}})
	wantCode(t, "ack below SPSO", late.Topics[0].Partitions[0].ErrorCode, nil)

	// ShareAcknowledge cannot open a session, needs one, and checks epochs.
	if r := s.ack(2, "m1", 0, false, nil); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge epoch 0: code %d", r.ErrorCode)
	}
	if r := s.ack(2, "m1", 9, false, nil); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge wrong epoch: code %d", r.ErrorCode)
	}
	if r := s.ack(2, "nobody", 1, false, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("ShareAcknowledge without a session: code %d", r.ErrorCode)
	}
	// Closing ends the session: its epoch is gone afterwards.
	if r := s.ack(2, "m1", -1, false, nil); r.ErrorCode != 0 {
		t.Fatalf("closing ShareAcknowledge: code %d", r.ErrorCode)
	}
	if r := s.ack(2, "m1", 6, false, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: code %d", r.ErrorCode)
	}
}

// TestShareFetchAcrossChunks: acquired records whose batches lie in several
// storage chunks go out whole, back to back and in order (§2.5: the batches
// that hold the acquired offsets), decoded here as a client would.
func TestShareFetchAcrossChunks(t *testing.T) {
	s := newRawShare(t, 1) // offset 0: "v0", in the partition's first, small chunk
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.nc.RemoteAddr().String()), kgo.DefaultProduceTopic("t"),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Offsets 1-12, 100 KB each: the chunks after the first double from
	// there, so these land in several.
	rng := rand.New(rand.NewPCG(1, 2))
	values := [][]byte{[]byte("v0")}
	for range 12 {
		v := make([]byte, 100_000)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		values = append(values, v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(len(values) - 1)

	p := partitionOf(t, s.fetch(2, "m1", 0, nil, func(r *kmsg.ShareFetchRequest) { r.MaxBytes = 50 << 20 }))
	if len(p.AcquiredRecords) == 0 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[len(p.AcquiredRecords)-1].LastOffset != last {
		t.Fatalf("acquired %+v, want offsets 0-%d", p.AcquiredRecords, last)
	}
	batches := splitBatches(t, p.Records) // checks each batch's CRC
	if len(batches) != len(values) {
		t.Fatalf("%d batches, want %d", len(batches), len(values))
	}
	for i, b := range batches {
		var rec kmsg.Record
		err := rec.ReadFrom(b.Records)
		if intact := bytes.Equal(rec.Value, values[i]); err != nil || b.FirstOffset != int64(i) || !intact {
			t.Fatalf("batch %d: base offset %d, value intact %v, err %v", i, b.FirstOffset, intact, err)
		}
	}
}

// Acknowledgements name topics by ID; an unknown one fails that partition.
func TestShareAcknowledgeUnknownTopic(t *testing.T) {
	s := newRawShare(t, 1)
	partitionOf(t, s.fetch(2, "m1", 0, nil, nil))
	s.topicID[0] ^= 0xff
	r := s.ack(2, "m1", 1, false, []ackSpec{{0, 0, []int8{1}}})
	wantCode(t, "unknown topic", r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID)
}

// Row 8: a connection that drops without closing its share session gives
// the member's records back at once (the attempt counts), rather than when
// their locks expire.
func TestShareDisconnectReleases(t *testing.T) {
	s := newRawShare(t, 2)
	if p := partitionOf(t, s.fetch(2, "m1", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("m1 acquired %+v", p.AcquiredRecords)
	}
	addr := s.c.nc.RemoteAddr().String()
	s.c.nc.Close() // no closing request: the broker notices the drop

	other := &rawShare{t: t, c: dialRaw(t, addr), group: s.group, topicID: s.topicID}
	// The release happens when the broker's read of the dropped connection
	// fails, which races with this fetch; a long MaxWait lets the fetch
	// wait for it (the release wakes waiting fetches) instead of answering
	// empty.
	p := partitionOf(t, other.fetch(2, "m2", 0, nil, func(r *kmsg.ShareFetchRequest) { r.MaxWaitMillis = 10_000 }))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("after m1 dropped: m2 acquired %+v, want 0-1 at delivery count 2", p.AcquiredRecords)
	}
}

// A group's share.record.lock.duration.ms is honoured: its records are
// locked for that long, and AcquisitionLockTimeoutMs says so.
func TestShareGroupLockDurationHonoured(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	s := newRawShare(t, 1, clock)
	ctx, cl := s.client()
	setGroupConfig(t, ctx, cl, "g", "share.record.lock.duration.ms", "20000")

	resp := s.fetch(2, "m1", 0, nil, nil)
	if p := partitionOf(t, resp); len(p.AcquiredRecords) != 1 || resp.AcquisitionLockTimeoutMillis != 20000 {
		t.Fatalf("m1: acquired %+v, lock timeout %d", p.AcquiredRecords, resp.AcquisitionLockTimeoutMillis)
	}
	other := &rawShare{t: t, c: dialRaw(t, s.c.nc.RemoteAddr().String()), group: s.group, topicID: s.topicID}
	clock.Advance(20*time.Second - time.Millisecond)
	if p := partitionOf(t, other.fetch(2, "m2", 0, nil, nil)); len(p.AcquiredRecords) != 0 {
		t.Fatalf("1 ms before the group's lock ends, m2 acquired %+v", p.AcquiredRecords)
	}
	clock.Advance(time.Millisecond)
	if p := partitionOf(t, other.fetch(2, "m2", 1, nil, nil)); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("when the group's lock ends, m2 acquired %+v", p.AcquiredRecords)
	}
}

// A group config changed after its share partitions exist reaches them:
// the next lock taken uses the new duration.
func TestShareGroupConfigChangeReachesExistingPartitions(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	s := newRawShare(t, 1, clock)
	ctx, cl := s.client()

	if p := partitionOf(t, s.fetch(2, "m1", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("m1 acquired %+v", p.AcquiredRecords) // locked for the default 30 s
	}
	setGroupConfig(t, ctx, cl, "g", "share.record.lock.duration.ms", "20000")
	wantCode(t, "release", s.ack(2, "m1", 1, false, []ackSpec{{0, 0, []int8{2}}}).Topics[0].Partitions[0].ErrorCode, nil)
	resp := s.fetch(2, "m1", 2, nil, nil) // reacquired under the new duration
	if p := partitionOf(t, resp); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 2 || resp.AcquisitionLockTimeoutMillis != 20000 {
		t.Fatalf("reacquired %+v with lock timeout %d", p.AcquiredRecords, resp.AcquisitionLockTimeoutMillis)
	}
	other := &rawShare{t: t, c: dialRaw(t, s.c.nc.RemoteAddr().String()), group: s.group, topicID: s.topicID}
	clock.Advance(20 * time.Second)
	if p := partitionOf(t, other.fetch(2, "m2", 0, nil, nil)); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 3 {
		t.Fatalf("20 s after the reacquisition, m2 acquired %+v, want the record at delivery count 3", p.AcquiredRecords)
	}
}
