package consoletest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/internal/testadmin"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// BenchmarkShareConsumeWithConsole measures console-live-bound's promise
// that an open console costs a busy share group little: kgo share-consumes
// and accepts records on a broker in this process, with no console, and
// with one console's event stream watching the share group. It reports
// the process's CPU time per record (broker and client together: the
// difference between the two runs is the console's).
//
//	go test -run '^$' -bench ShareConsumeWithConsole -benchtime 100000x ./internal/consoletest
func BenchmarkShareConsumeWithConsole(b *testing.B) {
	for _, console := range []bool{false, true} {
		b.Run(fmt.Sprintf("console=%v", console), func(b *testing.B) { benchShareConsume(b, console) })
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchShareConsume(b *testing.B, console bool) {
	br := sharebrokertest.Start(b, sharebrokertest.WithRealClock(), sharebrokertest.WithHTTP(),
		sharebrokertest.WithProperty("num.partitions", "1"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	const topic, groupID = "load", "load-workers"
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	testadmin.SetGroupConfig(b, ctx, admin, groupID, "share.auto.offset.reset", "earliest")
	value := make([]byte, 100)
	recs := make([]*kgo.Record, b.N)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: value}
	}
	if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(groupID))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if console {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+br.HTTPAddr+"/v1/events?watch=/v1/share-groups/"+groupID, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("event stream: %v %v", err, resp)
		}
		go func() {
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	b.ResetTimer()
	start := cpuTime()
	for n := 0; n < b.N; {
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d", n, b.N)
		}
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept); n++ })
	}
	if err := cl.FlushAcks(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/record")
}
