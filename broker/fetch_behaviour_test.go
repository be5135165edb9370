package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Fetch behaviour against raw requests. Every broker here runs on a manual
// clock, so a long-poll deadline fires only when the test advances the
// clock: a fetch that returns by itself was woken by something else, and
// one that should return but does not fails the test at its read deadline.

// manualBroker starts a broker on a manual clock and waits until its
// retention loop has armed its timer, so Pending counts fetch timers from
// a known baseline.
func manualBroker(t *testing.T, props map[string]string) (*locktimer.ManualClock, string, int) {
	t.Helper()
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	if props == nil {
		props = map[string]string{}
	}
	props["connections.max.idle.ms"] = "-1" // no idle sweep's timer in the count
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: props})
	waitPending(t, clock, 1)
	return clock, addr, 1
}

// waitPending polls until the clock has n timers scheduled: a long-polling
// fetch arms one when it starts to wait. The poll is bounded by a deadline;
// nothing is inferred from elapsed time.
func waitPending(t *testing.T, clock *locktimer.ManualClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for clock.Pending() != n {
		select {
		case <-ctx.Done():
			t.Fatalf("clock has %d pending timers, want %d", clock.Pending(), n)
		case <-tick.C:
		}
	}
}

// fetched is one fetch answer for one partition, decoded.
type fetched struct {
	kmsg.FetchResponseTopicPartition
	batches []kmsg.RecordBatch
}

func decodeFetch(t *testing.T, resp kmsg.Response) []fetched {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	wantCode(t, "fetch (top level)", fr.ErrorCode, nil)
	var out []fetched
	for _, rt := range fr.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, fetched{rp, splitBatches(t, rp.RecordBatches)})
		}
	}
	return out
}

func TestFetchLongPollWokenByAppend(t *testing.T) {
	clock, addr, base := manualBroker(t, nil)
	const topic = "long-poll"
	producer := dialRaw(t, addr)
	producer.createTopics(topic)
	fetcher := dialRaw(t, addr)

	// An hour of MaxWait on a clock nobody advances: only the append can
	// end this fetch.
	req := fetchReq(topic, 0, 0)
	req.MaxWaitMillis = 3_600_000
	req.MinBytes = 1
	corr := fetcher.send(req)
	waitPending(t, clock, base+1)

	sp := producer.produce(topic, 0, plainBatch(2).Build())
	wantCode(t, "produce", sp.ErrorCode, nil)

	got := decodeFetch(t, fetcher.recv(req, corr, 10*time.Second))
	if len(got) != 1 || countRecords(got[0].batches) != 2 || got[0].HighWatermark != 2 {
		t.Fatalf("woken fetch: %d partitions, want one with the 2 appended records and high watermark 2", len(got))
	}
	if !clock.Now().Equal(time.UnixMilli(1_700_000_000_000)) {
		t.Fatalf("clock moved to %v; the fetch must have been woken by the append alone", clock.Now())
	}
	// The woken fetch stopped its timer rather than leaving it to fire.
	waitPending(t, clock, base)
}

func TestFetchMaxWaitExpires(t *testing.T) {
	clock, addr, base := manualBroker(t, nil)
	const topic = "max-wait"
	c := dialRaw(t, addr)
	c.createTopics(topic)
	fetcher := dialRaw(t, addr)

	req := fetchReq(topic, 0, 0)
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	corr := fetcher.send(req)
	waitPending(t, clock, base+1)

	// Just short of the deadline the fetch is still parked: its timer is
	// still scheduled.
	clock.Advance(499 * time.Millisecond)
	if n := clock.Pending(); n != base+1 {
		t.Fatalf("after 499 ms: %d timers pending, want the fetch's still there (%d)", n, base+1)
	}
	clock.Advance(time.Millisecond)
	got := decodeFetch(t, fetcher.recv(req, corr, 10*time.Second))
	if len(got) != 1 || got[0].ErrorCode != 0 || len(got[0].batches) != 0 || got[0].HighWatermark != 0 {
		t.Fatalf("expired fetch: want one empty partition without error, got %+v", got)
	}

	// MaxWait 0 answers at once whatever MinBytes asks.
	req.MaxWaitMillis = 0
	req.MinBytes = 1 << 20
	got = decodeFetch(t, fetcher.request(req))
	if len(got) != 1 || len(got[0].batches) != 0 {
		t.Fatalf("MaxWait 0: want one empty partition, got %d", len(got))
	}
}

func TestFetchMinBytes(t *testing.T) {
	clock, addr, base := manualBroker(t, nil)
	const topic = "min-bytes"
	c := dialRaw(t, addr)
	c.createTopics(topic)
	fetcher := dialRaw(t, addr)

	small := plainBatch(1).Build()
	req := fetchReq(topic, 0, 0)
	req.MaxWaitMillis = 3_600_000
	req.MinBytes = int32(len(small)) + 1 // one batch is not enough, two are
	corr := fetcher.send(req)
	waitPending(t, clock, base+1) // parked before anything is produced

	wantCode(t, "first produce", c.produce(topic, 0, small).ErrorCode, nil)
	wantCode(t, "second produce", c.produce(topic, 0, plainBatch(1).Build()).ErrorCode, nil)
	got := decodeFetch(t, fetcher.recv(req, corr, 10*time.Second))
	// Had the first append ended the wait, the answer would hold one batch.
	if len(got) != 1 || len(got[0].batches) != 2 {
		t.Fatalf("MinBytes fetch: want both batches in one answer, got %d batches", len(got[0].batches))
	}
}

// TestFetchMinBytesAcrossChunks stores more than one log chunk (1 MiB) of
// data and asks for all of it: the broker must count (and return) every
// available batch, not only those in the first chunk, or the MinBytes wait
// never ends on its own.
func TestFetchMinBytesAcrossChunks(t *testing.T) {
	_, addr, _ := manualBroker(t, nil)
	const topic = "min-bytes-chunks"
	c := dialRaw(t, addr)
	c.createTopics(topic)

	total := 0
	const batches = 12
	for range batches {
		spec := plainBatch(1)
		spec.ValueBytes = 100_000
		b := spec.Build()
		total += len(b)
		wantCode(t, "produce 100 KB", c.produce(topic, 0, b).ErrorCode, nil)
	}

	req := fetchReq(topic, 0, 0)
	req.MaxWaitMillis = 3_600_000
	req.MinBytes = int32(total)
	got := decodeFetch(t, c.recv(req, c.send(req), 10*time.Second))
	if len(got[0].batches) != batches {
		t.Fatalf("fetch of %d bytes: got %d batches, want all %d", total, len(got[0].batches), batches)
	}
	for i, b := range got[0].batches {
		if b.FirstOffset != int64(i) {
			t.Fatalf("batch %d has base offset %d", i, b.FirstOffset)
		}
	}
}

// TestFetchSmallReadAcrossChunks (whole-batches) reads a run that crosses
// the partition's first storage chunks but is too small for a vectored
// write, so its pieces are joined and encoded through kmsg: every batch
// must come back whole, in order and exactly as produced.
func TestFetchSmallReadAcrossChunks(t *testing.T) {
	_, addr, _ := manualBroker(t, nil)
	const topic = "small-across-chunks"
	c := dialRaw(t, addr)
	c.createTopics(topic)

	const batches = 6 // ~2 KB each: the first 4 KB chunk holds one
	base := plainBatch(1).TimestampMs
	for i := range batches {
		spec := plainBatch(1)
		spec.ValueBytes = 2000
		spec.TimestampMs = base + int64(i)
		wantCode(t, "produce 2 KB", c.produce(topic, 0, spec.Build()).ErrorCode, nil)
	}
	got := c.fetchAll(topic, 0) // decodes every batch and checks its CRC
	if len(got) != batches {
		t.Fatalf("fetch: %d batches, want %d", len(got), batches)
	}
	for i, b := range got {
		if b.FirstOffset != int64(i) || b.FirstTimestamp != base+int64(i) {
			t.Fatalf("batch %d has base offset %d, timestamp %d", i, b.FirstOffset, b.FirstTimestamp)
		}
	}
}

// TestFetchByteLimits covers PartitionMaxBytes, the response MaxBytes and the
// KIP-74 rule that the first batch of the first partition with data is
// returned even when it alone is over a limit.
func TestFetchByteLimits(t *testing.T) {
	_, addr, _ := manualBroker(t, map[string]string{"num.partitions": "2"})
	const topic = "byte-limits"
	c := dialRaw(t, addr)
	c.createTopics(topic)
	spec := plainBatch(1)
	spec.ValueBytes = 1000
	batchLen := int32(len(spec.Build()))
	for p := range int32(2) {
		for range 3 {
			wantCode(t, "produce", c.produce(topic, p, spec.Build()).ErrorCode, nil)
		}
	}

	// fetchBoth asks for both partitions from offset 0 (or from the high
	// watermark for p0 when p0Empty) and returns how many batches each got.
	fetchBoth := func(maxBytes, partMax int32, p0Empty bool) [2]int {
		t.Helper()
		req := fetchReq(topic, 0, 0)
		req.MaxBytes = maxBytes
		if p0Empty {
			req.Topics[0].Partitions[0].FetchOffset = 3
		}
		p1 := req.Topics[0].Partitions[0]
		p1.Partition = 1
		p1.FetchOffset = 0
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = partMax
		}
		got := decodeFetch(t, c.request(req))
		if len(got) != 2 {
			t.Fatalf("want 2 partitions, got %d", len(got))
		}
		var n [2]int
		for i, f := range got {
			wantCode(t, "partition", f.ErrorCode, nil)
			n[i] = len(f.batches)
		}
		return n
	}

	for _, tc := range []struct {
		name           string
		maxBytes, part int32
		p0Empty        bool
		wantP0, wantP1 int
	}{
		{"no limit reached", 1 << 20, 1 << 20, false, 3, 3},
		{"partition max 2.5 batches", 1 << 20, batchLen * 5 / 2, false, 2, 2},
		{"partition max below one batch: first partition only gets one", 1 << 20, 100, false, 1, 0},
		{"response max 2.5 batches", batchLen * 5 / 2, 1 << 20, false, 2, 0},
		{"response max 4.5 batches", batchLen * 9 / 2, 1 << 20, false, 3, 1},
		{"response max below one batch", 100, 1 << 20, false, 1, 0},
		{"KIP-74 applies to the first partition with data", 100, 100, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fetchBoth(tc.maxBytes, tc.part, tc.p0Empty)
			if got != [2]int{tc.wantP0, tc.wantP1} {
				t.Fatalf("MaxBytes %d PartitionMaxBytes %d (batch %d bytes): got %v batches, want [%d %d]",
					tc.maxBytes, tc.part, batchLen, got, tc.wantP0, tc.wantP1)
			}
		})
	}
}

func TestFetchOffsetOutOfRange(t *testing.T) {
	_, addr, _ := manualBroker(t, nil)
	const topic = "out-of-range"
	c := dialRaw(t, addr)
	c.createTopics(topic)
	wantCode(t, "produce", c.produce(topic, 0, plainBatch(3).Build()).ErrorCode, nil)

	for _, tc := range []struct {
		offset int64
		want   *kerr.Error
	}{
		{-1, kerr.OffsetOutOfRange},
		{0, nil},
		{2, nil},
		{3, nil}, // the high watermark: nothing yet, not an error
		{4, kerr.OffsetOutOfRange},
		{1 << 40, kerr.OffsetOutOfRange},
	} {
		// A long MaxWait on a clock that never moves: an error must answer
		// at once, and so must the offsets that have data.
		req := fetchReq(topic, 0, tc.offset)
		req.MinBytes = 1
		if tc.offset != 3 {
			req.MaxWaitMillis = 3_600_000
		}
		got := decodeFetch(t, c.recv(req, c.send(req), 10*time.Second))
		wantCode(t, "fetch", got[0].ErrorCode, tc.want)
		if got[0].HighWatermark != 3 || got[0].LogStartOffset != 0 {
			t.Fatalf("offset %d: high watermark %d, log start %d; want 3 and 0", tc.offset, got[0].HighWatermark, got[0].LogStartOffset)
		}
		if tc.want != nil && len(got[0].batches) != 0 {
			t.Fatalf("offset %d: error answer carries %d batches", tc.offset, len(got[0].batches))
		}
	}
}

// TestTopicIDs drives Produce v13 and Fetch v13+, which name topics by ID.
func TestTopicIDs(t *testing.T) {
	_, addr, _ := manualBroker(t, nil)
	const topic = "by-id"
	c := dialRaw(t, addr)
	c.createTopics(topic)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(rawMetadataVersion)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	id := c.request(md).(*kmsg.MetadataResponse).Topics[0].TopicID
	if id == [16]byte{} {
		t.Fatal("Metadata returned a zero topic ID")
	}
	unknown := id
	unknown[0] ^= 0xff

	produce := func(topicID [16]byte) kmsg.ProduceResponseTopic {
		req := produceReq("", 0, -1, plainBatch(2).Build())
		req.SetVersion(13)
		req.Topics[0].TopicID = topicID
		return c.request(req).(*kmsg.ProduceResponse).Topics[0]
	}
	st := produce(id)
	wantCode(t, "produce by ID", st.Partitions[0].ErrorCode, nil)
	if st.TopicID != id {
		t.Fatalf("produce response names topic %x, want %x", st.TopicID, id)
	}
	wantCode(t, "produce to unknown ID", produce(unknown).Partitions[0].ErrorCode, kerr.UnknownTopicID)

	fetch := func(topicID [16]byte, leaderEpoch int32) fetched {
		req := fetchReq("", 0, 0)
		req.SetVersion(17)
		req.Topics[0].TopicID = topicID
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = leaderEpoch
		resp := c.request(req).(*kmsg.FetchResponse)
		if resp.Topics[0].TopicID != topicID {
			t.Fatalf("fetch response names topic %x, want %x", resp.Topics[0].TopicID, topicID)
		}
		return decodeFetch(t, resp)[0]
	}
	f := fetch(id, 0)
	wantCode(t, "fetch by ID", f.ErrorCode, nil)
	if countRecords(f.batches) != 2 {
		t.Fatalf("fetch by ID: %d records, want 2", countRecords(f.batches))
	}
	wantCode(t, "fetch unknown ID", fetch(unknown, -1).ErrorCode, kerr.UnknownTopicID)
	wantCode(t, "fetch at a future leader epoch", fetch(id, 5).ErrorCode, kerr.UnknownLeaderEpoch)
}

// TestFetchNoPartitions: a fetch that names nothing answers at once, even
// with a long MaxWait, since no append could wake it.
func TestFetchNoPartitions(t *testing.T) {
	_, addr, _ := manualBroker(t, nil)
	c := dialRaw(t, addr)
	req := fetchReq("x", 0, 0)
	req.Topics = nil
	req.MaxWaitMillis = 3_600_000
	req.MinBytes = 1
	if got := decodeFetch(t, c.recv(req, c.send(req), 10*time.Second)); len(got) != 0 {
		t.Fatalf("empty fetch answered with %d partitions", len(got))
	}
}
