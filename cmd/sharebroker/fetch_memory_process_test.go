package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetch-from-files (docs/log.md): a data-dir broker writes a Fetch answer
// from its segment files, so clients that ask for everything and never
// read cost it next to no memory. The broker runs as its own process and
// its VmRSS is read from /proc, as issue 21 measured it: on main, 8 such
// fetches of a larger log took 465 MB and 16 took 914 MB.
func TestDataDirUnreadFetchesBoundedRSS(t *testing.T) {
	const (
		conns      = 16
		valueBytes = 256 << 10
		records    = 128 // 32 MiB in one partition
		boundMB    = 100
	)
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("reads VmRSS from /proc")
	}
	p := startDataDir(t, t.TempDir())
	httpAddr := p.httpAddr(t)
	produceBulk(t, p.addr, "bulk", records, valueBytes)
	idleMB := statusMB(t, p.cmd.Process.Pid, "VmRSS")

	var held []net.Conn
	for i := range conns {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(fetchAllFrame(int32(i))); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The broker counts a request once its answer is built, before
	// writing it: from then on that answer is what the connection holds.
	deadline := time.Now().Add(60 * time.Second)
	for answered(t, httpAddr, "Fetch") < conns {
		if time.Now().After(deadline) {
			t.Fatalf("the broker built %d of %d Fetch answers within 60 s", answered(t, httpAddr, "Fetch"), conns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rssMB := statusMB(t, p.cmd.Process.Pid, "VmRSS")
	peakMB := statusMB(t, p.cmd.Process.Pid, "VmHWM")
	t.Logf("%d unread fetches of a %d MiB partition: VmRSS %.1f MB (%.1f MB before them), VmHWM %.1f MB",
		conns, records*valueBytes>>20, rssMB, idleMB, peakMB)
	if rssMB > boundMB {
		t.Errorf("VmRSS %.1f MB with %d unread fetches, bound %d MB", rssMB, conns, boundMB)
	}

	// And the answers held back are whole: one read to its end decodes
	// to every record.
	c := held[0]
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp := readFetchResponse(t, c)
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || sp.HighWatermark != records {
		t.Fatalf("answer: error code %d, high watermark %d, want 0 and %d", sp.ErrorCode, sp.HighWatermark, records)
	}
	if n := len(sp.RecordBatches); n < records*valueBytes {
		t.Fatalf("answer carries %d record bytes, want at least %d", n, records*valueBytes)
	}
}

// produceBulk produces n records of valueBytes random bytes each to
// partition 0 of topic, uncompressed, and waits for them all.
func produceBulk(t *testing.T, addr, topic string, n, valueBytes int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := make([]byte, valueBytes)
		for j := 0; j < len(v); j += 8 {
			binary.LittleEndian.PutUint64(v[j:], rng.Uint64())
		}
		recs[i] = &kgo.Record{Value: v}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// fetchAllFrame is a Fetch v12 request frame for all of partition 0 of
// topic bulk, as much as the broker will send (MaxBytes 2^31-1), at once.
func fetchAllFrame(correlationID int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxBytes = 1<<31 - 1
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "bulk"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1<<31 - 1
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("unread")).AppendRequest(nil, req, correlationID)
}

// readFetchResponse reads one Fetch v12 response frame from c.
func readFetchResponse(t *testing.T, c net.Conn) *kmsg.FetchResponse {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	// Correlation ID, then the flexible header's empty tags.
	if err := resp.ReadFrom(frame[5:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// answered sums sharebroker_requests_total of api on the process's
// /metrics.
func answered(t *testing.T, httpAddr, api string) int {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sharebroker_requests_total{") || !strings.Contains(line, `api="`+api+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}

// statusMB reads a kB field of /proc/pid/status, in MB.
func statusMB(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return float64(kb) / 1000
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
