package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// empty-record-set: a Fetch or ShareFetch partition without records carries
// an empty record set, never a null one, whether it has an error or not and
// whichever encoder writes the answer. kmsg decodes a null record set as a
// nil slice and an empty one as a non-nil slice of length 0, which is how
// these tests tell them apart.

// emptySetEnv is a broker with topic "e" of three partitions: p0 holds one
// record of valueBytes, p1 and p2 are empty. It has a share group "g" that
// reads from the earliest offset.
type emptySetEnv struct {
	t       *testing.T
	c       *rawConn
	topicID [16]byte
}

func newEmptySetEnv(t *testing.T, valueBytes int, cfg broker.Config) (*emptySetEnv, *broker.Broker) {
	t.Helper()
	b, addr := startBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("e"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := dialRaw(t, addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7) // topic IDs in the answer
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "e", 3, 1
	create.TimeoutMillis = 10_000
	create.Topics = append(create.Topics, ct)
	cresp := c.request(create).(*kmsg.CreateTopicsResponse)
	wantCode(t, "create topic", cresp.Topics[0].ErrorCode, nil)
	value := make([]byte, valueBytes)
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	setGroupConfig(t, ctx, cl, "g", "share.auto.offset.reset", "earliest")
	return &emptySetEnv{t: t, c: c, topicID: cresp.Topics[0].TopicID}, b
}

// fetchResp sends a Fetch at version v for the partitions of "e" named in
// from, each from its offset, and returns the answer.
func (e *emptySetEnv) fetchResp(v int16, from map[int32]int64) *kmsg.FetchResponse {
	e.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "e", e.topicID
	for p, offset := range from {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = p, offset
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 10<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return e.c.request(req).(*kmsg.FetchResponse)
}

// fetch sends a Fetch at version v for p0 from offset 0 (the record), p1
// from 0 (nothing yet), p2 from 100 (out of range) and p7 (no such
// partition), and returns the partitions of the answer by index.
func (e *emptySetEnv) fetch(v int16) map[int32]kmsg.FetchResponseTopicPartition {
	e.t.Helper()
	resp := e.fetchResp(v, map[int32]int64{0: 0, 1: 0, 2: 100, 7: 0})
	if len(resp.Topics) != 1 {
		e.t.Fatalf("fetch v%d: %d topics, want 1", v, len(resp.Topics))
	}
	out := make(map[int32]kmsg.FetchResponseTopicPartition)
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p
	}
	return out
}

// checkFetchRecordSets checks the partitions fetch returned: p0 has its
// record, the others an empty (not null) record set beside their errors.
func checkFetchRecordSets(t *testing.T, v int16, ps map[int32]kmsg.FetchResponseTopicPartition) {
	t.Helper()
	wants := map[int32]int16{0: 0, 1: 0, 2: kerr.OffsetOutOfRange.Code, 7: kerr.UnknownTopicOrPartition.Code}
	for p, code := range wants {
		got, ok := ps[p]
		switch {
		case !ok:
			t.Fatalf("fetch v%d: partition %d missing from the answer", v, p)
		case got.ErrorCode != code:
			t.Fatalf("fetch v%d p%d: error %v, want %v", v, p, kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(code))
		case p == 0 && len(got.RecordBatches) == 0:
			t.Fatalf("fetch v%d p0: no records, want the produced one", v)
		case p != 0 && got.RecordBatches == nil:
			t.Fatalf("fetch v%d p%d: null record set, want an empty one (empty-record-set)", v, p)
		case p != 0 && len(got.RecordBatches) != 0:
			t.Fatalf("fetch v%d p%d: %d record bytes, want none", v, p, len(got.RecordBatches))
		}
	}
}

// A small answer is encoded through kmsg: every served version, classic
// (int32 length) and flexible (varint length) alike.
func TestFetchEmptyRecordSetEncoded(t *testing.T) {
	e, _ := newEmptySetEnv(t, 10, broker.Config{})
	for v := int16(4); v <= 18; v++ {
		checkFetchRecordSets(t, v, e.fetch(v))
	}
}

// An answer with enough record bytes goes out as a vectored write with the
// records spliced in (wire.AppendFetchResponse); the partitions without
// records must be empty there too.
func TestFetchEmptyRecordSetSpliced(t *testing.T) {
	e, _ := newEmptySetEnv(t, 64<<10, broker.Config{})
	for v := int16(4); v <= 18; v++ {
		ps := e.fetch(v)
		if n := len(ps[0].RecordBatches); n < 64<<10 {
			t.Fatalf("fetch v%d p0: %d record bytes, want the 64 KiB record (spliced path)", v, n)
		}
		checkFetchRecordSets(t, v, ps)
	}
}

// shareFetchResp has member fetch all three partitions at version v in a
// new share session and returns the answer.
func (e *emptySetEnv) shareFetchResp(v int16, member string) *kmsg.ShareFetchResponse {
	e.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = v
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
	req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 1, 50<<20, 500, 500
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = e.topicID
	for p := range int32(3) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		tp.Partitions = append(tp.Partitions, rp)
	}
	req.Topics = append(req.Topics, tp)
	return e.c.request(req).(*kmsg.ShareFetchResponse)
}

// shareFetch is shareFetchResp expecting no top-level error; it returns
// the partitions of the answer by index.
func (e *emptySetEnv) shareFetch(v int16, member string) map[int32]kmsg.ShareFetchResponseTopicPartition {
	e.t.Helper()
	resp := e.shareFetchResp(v, member)
	wantCode(e.t, fmt.Sprintf("share fetch v%d", v), resp.ErrorCode, nil)
	out := make(map[int32]kmsg.ShareFetchResponseTopicPartition)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// checkShareRecordSets checks that p0 came with its record (acquired when
// acquired is set) and every other partition with an empty record set.
func checkShareRecordSets(t *testing.T, v int16, ps map[int32]kmsg.ShareFetchResponseTopicPartition, minRecordBytes int) {
	t.Helper()
	if p0 := ps[0]; len(p0.AcquiredRecords) != 1 || len(p0.Records) < minRecordBytes {
		t.Fatalf("share fetch v%d p0: acquired %+v with %d record bytes, want offset 0 and at least %d bytes", v, p0.AcquiredRecords, len(p0.Records), minRecordBytes)
	}
	for p := int32(1); p < 3; p++ {
		got, ok := ps[p]
		switch {
		case !ok:
			t.Fatalf("share fetch v%d: partition %d missing from the answer", v, p)
		case got.Records == nil:
			t.Fatalf("share fetch v%d p%d: null record set, want an empty one (empty-record-set)", v, p)
		case len(got.Records) != 0 || len(got.AcquiredRecords) != 0:
			t.Fatalf("share fetch v%d p%d: %d record bytes, acquired %+v, want none", v, p, len(got.Records), got.AcquiredRecords)
		}
	}
}

// ShareFetch through kmsg (a small answer) and spliced (a large one), at
// both served versions. Each version's member starts its own session and
// acquires the record anew: the previous member's lock is released by
// closing its session first.
func TestShareFetchEmptyRecordSet(t *testing.T) {
	for _, tc := range []struct {
		name       string
		valueBytes int
	}{{"encoded", 10}, {"spliced", 64 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			for v := int16(1); v <= 2; v++ {
				e, _ := newEmptySetEnv(t, tc.valueBytes, broker.Config{})
				checkShareRecordSets(t, v, e.shareFetch(v, fmt.Sprintf("m-v%d", v)), tc.valueBytes)
			}
		})
	}
}

// Fault injection builds its answers by reflection, mirroring the
// request's partitions; an injected error on Fetch or ShareFetch still
// carries empty record sets.
func TestFaultAnswersEmptyRecordSet(t *testing.T) {
	e, b := newEmptySetEnv(t, 10, broker.Config{EnableTestAPI: true, HTTP: "127.0.0.1:0"})
	base := "http://" + b.HTTPAddr().String()
	for _, body := range []string{`{"api_key":1,"error_code":6}`, `{"api_key":78,"error_code":6}`} {
		if status, out := httpPost(t, base+"/v1/test/faults", body); status != http.StatusCreated {
			t.Fatalf("arm %s: %d %s", body, status, out)
		}
	}

	fresp := e.fetchResp(12, map[int32]int64{0: 0, 1: 0, 2: 0})
	wantCode(t, "injected fetch", fresp.ErrorCode, kerr.NotLeaderForPartition)
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 3 {
		t.Fatalf("injected fetch: topics %+v, want the request's three partitions mirrored", fresp.Topics)
	}
	for _, p := range fresp.Topics[0].Partitions {
		if p.RecordBatches == nil {
			t.Fatalf("injected fetch p%d: null record set, want an empty one", p.Partition)
		}
	}

	sresp := e.shareFetchResp(2, "m1")
	wantCode(t, "injected share fetch", sresp.ErrorCode, kerr.NotLeaderForPartition)
	if len(sresp.Topics) != 1 || len(sresp.Topics[0].Partitions) != 3 {
		t.Fatalf("injected share fetch: topics %+v, want the request's three partitions mirrored", sresp.Topics)
	}
	for _, p := range sresp.Topics[0].Partitions {
		if p.Records == nil {
			t.Fatalf("injected share fetch p%d: null record set, want an empty one", p.Partition)
		}
	}
}
