package bench_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
)

// The cost of security, sharebroker against itself: the same workload over
// a PLAINTEXT, an SSL (TLS 1.3, generated ECDSA P-256 certificate) and a
// SASL_SSL (SCRAM-SHA-512) listener of one broker. Compare records/s of
// the sub-benchmarks; SASL adds only its handshake per connection, so
// SASL_SSL should match SSL.

// securities are the listeners the benchmarks reach the broker through.
var securities = []string{"PLAINTEXT", "SSL", "SASL_SSL"}

// startSecure starts a broker with every listener of securities and
// returns the PLAINTEXT address (for preloading), the client options that
// reach the listener named security, and a stop function.
func startSecure(tb testing.TB, security string) (plain string, opts []kgo.Opt, stop func()) {
	tb.Helper()
	b, stop := startBroker(tb, broker.Config{
		Props: map[string]string{
			"num.partitions": "4",
			"listeners":      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		},
		SASLUsers: []broker.SASLUser{{Name: "bench", Password: "bench-secret"}},
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM())
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	opts = []kgo.Opt{kgo.SeedBrokers(b.ListenerAddr(security).String())}
	switch security {
	case "SSL":
		opts = append(opts, kgo.DialTLSConfig(tc))
	case "SASL_SSL":
		opts = append(opts, kgo.DialTLSConfig(tc), kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism()))
	}
	return b.ListenerAddr("PLAINTEXT").String(), opts, stop
}

// BenchmarkSecureProduceSync is BenchmarkProduceSync (20k records,
// ProduceSync of 40 at a time) through each listener: the per-request
// cost of TLS shows.
func BenchmarkSecureProduceSync(b *testing.B) {
	for _, sec := range securities {
		b.Run(sec, func(b *testing.B) {
			var elapsed time.Duration
			var records int64
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				_, opts, stop := startSecure(b, sec)
				cl := newClient(b, "", opts...)
				warmUp(b, cl)
				ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
				rs := make([]*kgo.Record, syncRound)
				b.StartTimer()
				start := time.Now()
				var err error
				for sent := 0; sent < produceSyncRecords && err == nil; sent += syncRound {
					for j := range rs {
						rs[j] = &kgo.Record{Topic: benchTopic, Partition: int32(j % benchPartitions), Value: benchValue}
					}
					err = cl.ProduceSync(ctx, rs...).FirstErr()
				}
				elapsed += time.Since(start)
				b.StopTimer()
				records += produceSyncRecords
				cancel()
				cl.Close()
				stop()
				if err != nil {
					b.Fatalf("produce: %v", err)
				}
			}
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
		})
	}
}

// BenchmarkSecureFetch is BenchmarkFetch (200k records preloaded, read
// from the start of four partitions) through each listener: the bulk cost
// of TLS shows (record bytes are encrypted, not spliced from the log).
func BenchmarkSecureFetch(b *testing.B) {
	for _, sec := range securities {
		b.Run(sec, func(b *testing.B) {
			var elapsed time.Duration
			var read int64
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				plain, opts, stop := startSecure(b, sec)
				preload(b, plain, fetchRecords)
				cl := newClient(b, "", opts...)
				if err := cl.Ping(context.Background()); err != nil {
					b.Fatalf("ping: %v", err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
				assign := fromStart()
				b.StartTimer()
				start := time.Now()
				cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{benchTopic: assign})
				n, _, err := consume(ctx, cl, fetchRecords)
				elapsed += time.Since(start)
				b.StopTimer()
				read += int64(n)
				cancel()
				cl.Close()
				stop()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
		})
	}
}
