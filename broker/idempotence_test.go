package broker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Raw protocol helpers. The edge cases below need requests no client
// library would send (a retried sequence, an old epoch, acks=2), and some
// need to see what is *not* on the wire (acks=0), so they speak Kafka over a
// plain TCP connection and build record batches byte by byte.

// rawVersions pins the request versions these tests speak: the newest that
// still name topics (v13 of Produce and Fetch switch to topic IDs).
const (
	rawProduceVersion  = 12
	rawFetchVersion    = 12
	rawMetadataVersion = 12
)

// createTopics creates topics through Metadata auto-creation, with the
// broker's num.partitions.
func (c *rawConn) createTopics(topics ...string) {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(rawMetadataVersion)
	req.AllowAutoTopicCreation = true
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp := c.request(req).(*kmsg.MetadataResponse)
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			c.t.Fatalf("create %s: %v", *t.Topic, err)
		}
	}
}

func (c *rawConn) initProducerID(id int64, epoch int16) (int64, int16) {
	c.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(5)
	req.ProducerID, req.ProducerEpoch = id, epoch
	resp := c.request(req).(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		c.t.Fatalf("InitProducerId: %v", err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// produceReq is a Produce request of one batch to one partition.
func produceReq(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(rawProduceVersion)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produce sends one batch with acks=-1 and returns the partition's answer.
func (c *rawConn) produce(topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	resp := c.request(produceReq(topic, partition, -1, batch)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("produce: response has %d topics, want one topic with one partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// fetchReq is a Fetch request of one partition from offset, answered at
// once unless wait and minBytes say otherwise.
func fetchReq(topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(rawFetchVersion)
	req.ReplicaID = -1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 10 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchAll reads a whole partition with MaxWait 0 and returns its batches.
func (c *rawConn) fetchAll(topic string, partition int32) []kmsg.RecordBatch {
	c.t.Helper()
	resp := c.request(fetchReq(topic, partition, 0)).(*kmsg.FetchResponse)
	sp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		c.t.Fatalf("fetch %s/%d: %v", topic, partition, err)
	}
	return splitBatches(c.t, sp.RecordBatches)
}

// splitBatches decodes back-to-back record batches and checks each one's
// CRC, as a consumer would.
func splitBatches(t testing.TB, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("%d trailing bytes after the last batch", len(b))
		}
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if n > len(b) {
			t.Fatalf("batch of %d bytes, %d left", n, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		if crc := int32(crc32.Checksum(b[21:n], castagnoli)); crc != rb.CRC {
			t.Fatalf("batch at offset %d: CRC %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), uint32(crc))
		}
		out = append(out, rb)
		b = b[n:]
	}
	return out
}

func countRecords(batches []kmsg.RecordBatch) int {
	n := 0
	for _, b := range batches {
		n += int(b.NumRecords)
	}
	return n
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func plainBatch(records int) batchtest.Spec { return batchtest.Plain(records) }

func idemBatch(id int64, epoch int16, seq int32, records int) batchtest.Spec {
	return batchtest.Idempotent(id, epoch, seq, records)
}

func wantCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if got != 0 {
			t.Fatalf("%s: got %v, want no error", what, kerr.ErrorForCode(got))
		}
		return
	}
	if got != want.Code {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestIdempotentProduce(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	const topic = "idem"
	c.createTopics(topic)

	id, epoch := c.initProducerID(-1, -1)
	if id < 0 || epoch != 0 {
		t.Fatalf("InitProducerId: got id %d epoch %d, want id >= 0 epoch 0", id, epoch)
	}
	if id2, _ := c.initProducerID(-1, -1); id2 == id {
		t.Fatalf("two producers got the same ID %d", id)
	}
	// Without a transactional ID, Kafka answers a producer that names its
	// current ID and epoch with a fresh ID, not a bumped epoch.
	if id3, epoch3 := c.initProducerID(id, epoch); id3 == id || epoch3 != 0 {
		t.Fatalf("InitProducerId(%d, %d): got id %d epoch %d, want a fresh ID at epoch 0", id, epoch, id3, epoch3)
	}

	first := idemBatch(id, epoch, 0, 3).Build()
	second := idemBatch(id, epoch, 3, 2).Build()
	sp := c.produce(topic, 0, first)
	wantCode(t, "first batch", sp.ErrorCode, nil)
	if sp.BaseOffset != 0 {
		t.Fatalf("first batch at %d, want 0", sp.BaseOffset)
	}
	sp = c.produce(topic, 0, second)
	wantCode(t, "second batch", sp.ErrorCode, nil)
	if sp.BaseOffset != 3 {
		t.Fatalf("second batch at %d, want 3", sp.BaseOffset)
	}

	// A retry of either batch (the producer never saw the answer) gets the
	// original offset and is not stored again.
	for _, retry := range []struct {
		batch []byte
		base  int64
	}{{second, 3}, {first, 0}, {second, 3}} {
		sp = c.produce(topic, 0, retry.batch)
		wantCode(t, "retried batch", sp.ErrorCode, nil)
		if sp.BaseOffset != retry.base {
			t.Fatalf("retried batch answered with offset %d, want the original %d", sp.BaseOffset, retry.base)
		}
	}
	if n := countRecords(c.fetchAll(topic, 0)); n != 5 {
		t.Fatalf("log holds %d records after retries, want 5", n)
	}

	t.Run("sequence gap", func(t *testing.T) {
		sp := c.produce(topic, 0, idemBatch(id, epoch, 7, 1).Build())
		wantCode(t, "seq 7 after 4", sp.ErrorCode, kerr.OutOfOrderSequenceNumber)
		if n := countRecords(c.fetchAll(topic, 0)); n != 5 {
			t.Fatalf("log holds %d records after a rejected batch, want 5", n)
		}
		// The gap did not disturb the producer: the expected sequence
		// still succeeds.
		sp = c.produce(topic, 0, idemBatch(id, epoch, 5, 1).Build())
		wantCode(t, "seq 5 after 4", sp.ErrorCode, nil)
		if sp.BaseOffset != 5 {
			t.Fatalf("seq 5 at offset %d, want 5", sp.BaseOffset)
		}
	})

	t.Run("epochs", func(t *testing.T) {
		// An idempotent producer may bump its own epoch (KIP-360); the new
		// epoch restarts at sequence 0, and must.
		sp := c.produce(topic, 0, idemBatch(id, epoch+1, 4, 1).Build())
		wantCode(t, "new epoch at seq 4", sp.ErrorCode, kerr.OutOfOrderSequenceNumber)
		sp = c.produce(topic, 0, idemBatch(id, epoch+1, 0, 2).Build())
		wantCode(t, "new epoch at seq 0", sp.ErrorCode, nil)
		if sp.BaseOffset != 6 {
			t.Fatalf("new epoch batch at %d, want 6", sp.BaseOffset)
		}
		sp = c.produce(topic, 0, idemBatch(id, epoch, 6, 1).Build())
		wantCode(t, "old epoch", sp.ErrorCode, kerr.InvalidProducerEpoch)
		// Even a retry of an old-epoch batch is fenced, not deduplicated.
		sp = c.produce(topic, 0, first)
		wantCode(t, "old epoch retry", sp.ErrorCode, kerr.InvalidProducerEpoch)
		if n := countRecords(c.fetchAll(topic, 0)); n != 8 {
			t.Fatalf("log holds %d records, want 8", n)
		}
	})

	t.Run("unknown producer", func(t *testing.T) {
		// A producer the partition has no state for may start anywhere,
		// as in Kafka (its state could have been removed with its
		// records); from then on its sequence is checked.
		const stranger = 1 << 40
		sp := c.produce(topic, 0, idemBatch(stranger, 3, 42, 2).Build())
		wantCode(t, "unknown producer at seq 42", sp.ErrorCode, nil)
		sp = c.produce(topic, 0, idemBatch(stranger, 3, 44, 1).Build())
		wantCode(t, "then seq 44", sp.ErrorCode, nil)
		sp = c.produce(topic, 0, idemBatch(stranger, 3, 46, 1).Build())
		wantCode(t, "then seq 46", sp.ErrorCode, kerr.OutOfOrderSequenceNumber)
	})

	t.Run("partitions are independent", func(t *testing.T) {
		// Sequences are per partition: another partition of another topic
		// starts at 0 for the same producer.
		c.createTopics("idem-other")
		sp := c.produce("idem-other", 0, idemBatch(id, epoch+1, 0, 1).Build())
		wantCode(t, "other partition seq 0", sp.ErrorCode, nil)
	})
}

func TestProduceErrors(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"message.max.bytes": "2048"}})
	c := dialRaw(t, addr)
	const topic = "produce-errors"
	c.createTopics(topic)

	t.Run("unknown topic", func(t *testing.T) {
		sp := c.produce("no-such-topic", 0, plainBatch(1).Build())
		wantCode(t, "unknown topic", sp.ErrorCode, kerr.UnknownTopicOrPartition)
		sp = c.produce(topic, 7, plainBatch(1).Build())
		wantCode(t, "unknown partition", sp.ErrorCode, kerr.UnknownTopicOrPartition)
	})

	t.Run("bad acks", func(t *testing.T) {
		for _, acks := range []int16{2, -2} {
			resp := c.request(produceReq(topic, 0, acks, plainBatch(1).Build())).(*kmsg.ProduceResponse)
			wantCode(t, fmt.Sprintf("acks=%d", acks), resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)
		}
		if n := countRecords(c.fetchAll(topic, 0)); n != 0 {
			t.Fatalf("log holds %d records after bad-acks requests, want 0", n)
		}
	})

	t.Run("message too large", func(t *testing.T) {
		big := plainBatch(2)
		big.ValueBytes = 1500 // two records: over 2048 bytes
		sp := c.produce(topic, 0, big.Build())
		wantCode(t, "3 KB batch", sp.ErrorCode, kerr.MessageTooLarge)
		sp = c.produce(topic, 0, plainBatch(3).Build())
		wantCode(t, "small batch", sp.ErrorCode, nil)
		if n := countRecords(c.fetchAll(topic, 0)); n != 3 {
			t.Fatalf("log holds %d records, want only the small batch's 3", n)
		}
	})

	t.Run("corrupt batch", func(t *testing.T) {
		b := plainBatch(1).Build()
		b[len(b)-1] ^= 0xff
		sp := c.produce(topic, 0, b)
		wantCode(t, "flipped byte", sp.ErrorCode, kerr.CorruptMessage)
	})
}

func TestProduceAcksZero(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	const topic = "acks-zero"
	c.createTopics(topic)

	// With acks=0 the broker must not answer. Send the produce and then an
	// ApiVersions on the same connection: responses come in request order,
	// so the next response must be the ApiVersions one.
	c.send(produceReq(topic, 0, 0, plainBatch(4).Build()))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	resp := c.recv(av, c.send(av), 10*time.Second).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions", resp.ErrorCode, nil)

	if n := countRecords(c.fetchAll(topic, 0)); n != 4 {
		t.Fatalf("acks=0 produce stored %d records, want 4", n)
	}
}

func TestProduceAcksZeroErrorClosesConnection(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	// A failed acks=0 produce has no response to carry the error, so the
	// broker closes the connection instead (as Kafka does); the producer
	// notices and refreshes its metadata.
	c.send(produceReq("no-such-topic", 0, 0, plainBatch(1).Build()))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	corr := c.send(av)
	if _, err := c.tryRecv(av, corr, 10*time.Second); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isConnReset(err) {
		t.Fatalf("after a failed acks=0 produce: got %v, want the connection closed", err)
	}
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func TestLogAppendTime(t *testing.T) {
	start := time.UnixMilli(1_750_000_000_123)
	clock := locktimer.NewManualClock(start)
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: map[string]string{
		"log.message.timestamp.type": "LogAppendTime",
	}})
	c := dialRaw(t, addr)
	const topic = "append-time"
	c.createTopics(topic)

	id, epoch := c.initProducerID(-1, -1)
	batch := idemBatch(id, epoch, 0, 3).Build()
	sp := c.produce(topic, 0, batch)
	wantCode(t, "produce", sp.ErrorCode, nil)
	if sp.LogAppendTime != start.UnixMilli() {
		t.Fatalf("LogAppendTime %d, want the broker clock %d", sp.LogAppendTime, start.UnixMilli())
	}
	// A retry later still reports the time the batch was stored.
	clock.Advance(time.Minute)
	sp = c.produce(topic, 0, batch)
	wantCode(t, "retry", sp.ErrorCode, nil)
	if sp.LogAppendTime != start.UnixMilli() {
		t.Fatalf("retry LogAppendTime %d, want the original %d", sp.LogAppendTime, start.UnixMilli())
	}
	sp = c.produce(topic, 0, plainBatch(1).Build())
	wantCode(t, "second batch", sp.ErrorCode, nil)
	later := start.Add(time.Minute).UnixMilli()
	if sp.LogAppendTime != later {
		t.Fatalf("second LogAppendTime %d, want %d", sp.LogAppendTime, later)
	}

	batches := c.fetchAll(topic, 0)
	if len(batches) != 2 {
		t.Fatalf("fetched %d batches, want 2", len(batches))
	}
	for i, want := range []int64{start.UnixMilli(), later} {
		b := batches[i]
		if b.Attributes&0x08 == 0 || b.MaxTimestamp != want {
			t.Fatalf("batch %d: attributes %#x max timestamp %d, want the LogAppendTime bit and %d", i, b.Attributes, b.MaxTimestamp, want)
		}
	}

	// A real consumer reads the broker's time as every record's timestamp.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < 4; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 4 records before the deadline", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fs.Records() {
			want := start.UnixMilli()
			if r.Offset == 3 {
				want = later
			}
			if r.Timestamp.UnixMilli() != want || r.Attrs.TimestampType() != 1 {
				t.Fatalf("offset %d: timestamp %d type %d, want %d type 1 (LogAppendTime)", r.Offset, r.Timestamp.UnixMilli(), r.Attrs.TimestampType(), want)
			}
			got++
		}
	}
}
