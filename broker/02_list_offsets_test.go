package broker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// createTopic makes a one-partition topic through Metadata auto-creation.
func createTopic(t *testing.T, c *rawConn, topic string) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 && resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("creating %s: %+v", topic, resp.Topics)
	}
}

// rawProduce appends one batch and fails the test unless it is accepted.
func rawProduce(t *testing.T, c *rawConn, topic string, batch []byte) int64 {
	t.Helper()
	resp := c.request(produceRequest(topic, batch)).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce to %s: %v", topic, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.BaseOffset
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// codecs compress a records section as Kafka clients do.
var codecs = []struct {
	name     string
	id       int8
	compress func([]byte) []byte
	kgo      kgo.CompressionCodec
}{
	{"none", 0, nil, kgo.NoCompression()},
	{"gzip", 1, func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}, kgo.GzipCompression()},
	{"snappy", 2, func(b []byte) []byte { return s2.EncodeSnappy(nil, b) }, kgo.SnappyCompression()},
	{"lz4", 3, func(b []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}, kgo.Lz4Compression()},
	{"zstd", 4, func(b []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		return must(enc.EncodeAll(b, nil), nil)
	}, kgo.ZstdCompression()},
}

// TestListOffsetsCompressedBatches stores two compressed batches whose
// records are out of timestamp order and checks kadm's answers are exact
// to the record, not to the batch.
func TestListOffsetsCompressedBatches(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	raw := dialRaw(t, addr)

	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			topic := "lo-" + codec.name
			createTopic(t, raw, topic)
			// Offsets 0-2 stamped 1000, 1500, 1200; 3-6 stamped 2000, 1800, 2500, 2500.
			rawProduce(t, raw, topic, recordBatch([]int64{1000, 1500, 1200}, codec.id, codec.compress, false))
			rawProduce(t, raw, topic, recordBatch([]int64{2000, 1800, 2500, 2500}, codec.id, codec.compress, false))

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			lookup := func(l kadm.ListedOffsets, err error) kadm.ListedOffset {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				o, ok := l.Lookup(topic, 0)
				if !ok || o.Err != nil {
					t.Fatalf("no offset for %s/0: %+v", topic, o)
				}
				return o
			}
			if o := lookup(adm.ListStartOffsets(ctx, topic)); o.Offset != 0 {
				t.Errorf("start offset %d, want 0", o.Offset)
			}
			if o := lookup(adm.ListEndOffsets(ctx, topic)); o.Offset != 7 {
				t.Errorf("end offset %d, want 7", o.Offset)
			}
			for _, c := range []struct{ ms, wantOff, wantTs int64 }{
				{ms: 0, wantOff: 0, wantTs: 1000},
				{ms: 1001, wantOff: 1, wantTs: 1500}, // batch-level would say 0
				{ms: 1501, wantOff: 3, wantTs: 2000},
				{ms: 2001, wantOff: 5, wantTs: 2500}, // batch-level would say 3
			} {
				o := lookup(adm.ListOffsetsAfterMilli(ctx, c.ms, topic))
				if o.Offset != c.wantOff || o.Timestamp != c.wantTs {
					t.Errorf("after %d ms: offset %d at %d, want %d at %d", c.ms, o.Offset, o.Timestamp, c.wantOff, c.wantTs)
				}
			}
			// Nothing that new: kadm turns our -1 into the end offset.
			if o := lookup(adm.ListOffsetsAfterMilli(ctx, 2501, topic)); o.Offset != 7 {
				t.Errorf("after 2501 ms: offset %d, want the end offset 7", o.Offset)
			}

			// Max timestamp (-3, v7+): the first record of the tie.
			for _, v := range []int16{7, 11} {
				req := kmsg.NewPtrListOffsetsRequest()
				req.Version = v
				req.ReplicaID = -1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -3
				rp.CurrentLeaderEpoch = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := raw.request(req).(*kmsg.ListOffsetsResponse)
				p := resp.Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.Offset != 5 || p.Timestamp != 2500 || p.LeaderEpoch != 0 {
					t.Errorf("v%d max timestamp: %+v, want offset 5 at 2500", v, p)
				}
			}
		})
	}
}

// TestListOffsetsKgoProducer lets kgo build the batches, with each codec,
// and checks by-time lookups land on the exact record.
func TestListOffsetsKgoProducer(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			topic := "kgo-" + codec.name
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
				kgo.ProducerBatchCompression(codec.kgo), kgo.ProducerLinger(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			base := time.UnixMilli(1_700_000_000_000)
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{Value: bytes.Repeat([]byte{'x'}, 200), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			adm := kadm.NewClient(cl)
			for _, i := range []int64{0, 7, 13, 19} {
				l, err := adm.ListOffsetsAfterMilli(ctx, base.UnixMilli()+i, topic)
				if err != nil {
					t.Fatal(err)
				}
				o, _ := l.Lookup(topic, 0)
				if o.Err != nil || o.Offset != i || o.Timestamp != base.UnixMilli()+i {
					t.Errorf("record %d: %+v", i, o)
				}
			}
		})
	}
}

func TestListOffsetsErrors(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	raw := dialRaw(t, addr)
	createTopic(t, raw, "known")
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = -1
	for _, c := range []struct {
		topic     string
		partition int32
		epoch     int32
	}{{"known", 0, 1}, {"known", 7, -1}, {"unknown", 0, -1}} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = c.partition, c.epoch, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := raw.request(req).(*kmsg.ListOffsetsResponse)
	want := []int16{kerr.UnknownLeaderEpoch.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	for i, w := range want {
		if got := resp.Topics[i].Partitions[0]; got.ErrorCode != w || got.Offset != -1 {
			t.Errorf("case %d: %+v, want error %d and offset -1", i, got, w)
		}
	}
}
