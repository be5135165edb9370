package bench_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/storage"
)

// rttBatchRecords is the size of each batch in the raw benchmarks: a small
// batch, as a producer with the default linger sends under light load.
const rttBatchRecords = 10

// BenchmarkServerAllocs measures what the broker alone allocates per
// produced batch, which BenchmarkProduce cannot: there the kgo client shares
// the process and dominates -benchmem.
//
//   - append/sharebroker: storage.Partition.Append called directly with one
//     10-record batch per op; the storage layer's own cost.
//   - produce-rtt/<peer>: a raw Produce v9 request (acks=1, four partitions,
//     one 10-record batch each) written on a plain TCP connection and its
//     response read, one request per op. The client side is a pre-encoded
//     frame and reused buffers, so it allocates nothing per op and the
//     process's allocations are the broker's: read, decode, handle, encode,
//     write.
//
// Both report allocs/batch and B/batch from runtime.MemStats deltas around
// the loop (the same counters -benchmem reads).
func BenchmarkServerAllocs(b *testing.B) {
	b.Run("append/sharebroker", benchAppend)
	for _, p := range peers {
		b.Run("produce-rtt/"+p.name, func(b *testing.B) { benchProduceRTT(b, p) })
	}
}

func benchAppend(b *testing.B) {
	store := storage.NewStore()
	t, err := store.CreateTopic(benchTopic, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := t.Partition(0)
	now := time.Now().UnixMilli()
	raw := encodeBatch(rttBatchRecords, benchValue, now)
	opts := storage.AppendOptions{MaxMessageBytes: 1048588, NowMs: now}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Append(raw, opts); err != nil {
			b.Fatalf("append: %v", err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	reportPerBatch(b, &ms0, &ms1, b.N)
}

func benchProduceRTT(b *testing.B, p peer) {
	addr, stop := p.start(b)
	defer stop()
	c := dialRaw(b, addr)
	defer c.nc.Close()

	name := benchTopic
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	meta.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &name
	meta.Topics = append(meta.Topics, mt)
	if _, err := c.roundTrip(appendFrame(nil, meta)); err != nil {
		b.Fatalf("metadata: %v", err)
	}

	frame := appendFrame(nil, produceRequest(encodeBatch(rttBatchRecords, benchValue, time.Now().UnixMilli())))
	body, err := c.roundTrip(frame)
	if err != nil {
		b.Fatalf("produce: %v", err)
	}
	if err := checkProduceResponse(body); err != nil {
		b.Fatal(err)
	}

	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.roundTrip(frame); err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	reportPerBatch(b, &ms0, &ms1, b.N*benchPartitions)
}

func reportPerBatch(b *testing.B, ms0, ms1 *runtime.MemStats, batches int) {
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(batches), "allocs/batch")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(batches), "B/batch")
}

// produceRequest is Produce v9 (by topic name, flexible), acks=1, with batch
// for each of the bench topic's partitions.
func produceRequest(batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = benchTopic
	for p := int32(0); p < benchPartitions; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// checkProduceResponse decodes a Produce v9 response body (after the size)
// and fails on any partition error.
func checkProduceResponse(body []byte) error {
	const headerBytes = 4 + 1 // correlation ID, empty tag section
	if len(body) < headerBytes {
		return fmt.Errorf("produce response of %d bytes", len(body))
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(body[headerBytes:]); err != nil {
		return fmt.Errorf("decode produce response: %v", err)
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n++
			if p.ErrorCode != 0 {
				return fmt.Errorf("produce to %s/%d: error code %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	if n != benchPartitions {
		return fmt.Errorf("produce response names %d partitions, want %d", n, benchPartitions)
	}
	return nil
}

var formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))

// appendFrame appends req as a whole request frame (size, header, body).
func appendFrame(dst []byte, req kmsg.Request) []byte {
	return formatter.AppendRequest(dst, req, 1)
}

// rawConn is a Kafka connection without a client library: one request at a
// time, buffers reused, so a round trip allocates nothing on our side.
type rawConn struct {
	nc   net.Conn
	size [4]byte
	buf  []byte
}

func dialRaw(tb testing.TB, addr string) *rawConn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	return &rawConn{nc: nc}
}

// roundTrip writes frame and returns the response body (after the size),
// valid until the next call. Each round trip has a 10 s deadline.
func (c *rawConn) roundTrip(frame []byte) ([]byte, error) {
	if err := c.nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c.nc, c.size[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(c.size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.nc, c.buf); err != nil {
		return nil, err
	}
	return c.buf, nil
}
