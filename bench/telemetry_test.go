package bench_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareServerTelemetry measures what client telemetry (KIP-714)
// costs the broker per record while clients push every second (issue 24):
// BenchmarkShareServer's sharebroker workload with two kgo share
// consumers, the broker a child process with its HTTP listener, twice:
//
//   - sharebroker-telemetry-off: no subscription
//     (sharebroker.telemetry.default.subscription.enable=false, no
//     CLIENT_METRICS resource): the consumers push nothing.
//   - sharebroker-telemetry-on: a CLIENT_METRICS subscription of the
//     metrics named org.apache.kafka.* every 1000 ms, so both consumers
//     push every second, each push decoded and kept
//     (docs/telemetry.md).
//
// Compare server-cpu-ns/record of the two (bench/ratio.sh prints on/off);
// pushes/op are the PushTelemetry requests the broker accepted per op
// (from its /metrics), so a run that pushed nothing cannot pass for a
// cheap one. The workload is 3 × shareRecords records, so an op spans
// several push intervals. On a shared machine alternate the two over
// several runs and take medians:
//
//	go test -c -o /tmp/bt.test ./bench
//	for i in 1 2 3 4 5; do /tmp/bt.test -test.run '^$' -test.bench ShareServerTelemetry -test.benchtime 1x; done
func BenchmarkShareServerTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "sharebroker-telemetry-off"
		if on {
			name = "sharebroker-telemetry-on"
		}
		b.Run(name, func(b *testing.B) { benchTelemetry(b, on) })
	}
}

func benchTelemetry(b *testing.B, on bool) {
	const records = 3 * shareRecords
	var (
		elapsed, serverCPU time.Duration
		read, pushes       int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := startSharebrokerProcessHTTP(b, true,
			"--config", "sharebroker.telemetry.default.subscription.enable=false")
		preload(b, child.addr, records)
		setShareGroupConfig(b, child.addr, shareGroup, "share.auto.offset.reset", "earliest")
		if on {
			subscribeClientMetrics(b, child.addr, "org.apache.kafka.", 1000)
		}
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)

		b.StartTimer()
		srv0 := child.cpu(b)
		start := time.Now()
		res, err := consumeShare(ctx, child.addr, 2, records, func() { serverCPU += child.cpu(b) - srv0 })
		elapsed += res.lastAt.Sub(start)
		b.StopTimer()

		if err == nil {
			pushes += acceptedPushes(b, child.httpAddr)
		}
		cancel()
		child.stop()
		if err != nil {
			b.Fatal(err)
		}
		read += int64(res.distinct)
	}
	n := float64(max(read, 1))
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(serverCPU.Nanoseconds())/n, "server-cpu-ns/record")
	b.ReportMetric(float64(pushes)/float64(b.N), "pushes/op")
}

// subscribeClientMetrics makes a CLIENT_METRICS subscription of the
// metrics whose names begin with prefix, pushed every intervalMs.
func subscribeClientMetrics(tb testing.TB, addr, prefix string, intervalMs int) {
	tb.Helper()
	setConfigs(tb, addr, kmsg.ConfigResourceTypeClientMetrics, "bench", "metrics", prefix, "interval.ms", strconv.Itoa(intervalMs))
}

// acceptedPushes is the PushTelemetry requests the broker at httpAddr
// answered without error, from its /metrics.
func acceptedPushes(tb testing.TB, httpAddr string) int64 {
	tb.Helper()
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		tb.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `sharebroker_requests_total{api="PushTelemetry",error_code="0"`) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			n += int64(v)
		}
	}
	return n
}
