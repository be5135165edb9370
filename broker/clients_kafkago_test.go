package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/sharebroker/sharebroker/broker"
)

// TestKafkaGoRoundTrip writes through segmentio/kafka-go's Writer (which
// creates the topic through Metadata) and reads every partition back with a
// Reader that has Partition set and no group, checking offset, key, value,
// headers and timestamp of every message. kafka-go negotiates versions with
// ApiVersions but goes through its own connection code for fetching, with
// its own request encodings, so it catches framing mistakes the other
// clients do not.
func TestKafkaGoRoundTrip(t *testing.T) {
	const partitions = 2
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": strconv.Itoa(partitions)}})
	for _, c := range []struct {
		name  string
		codec compress.Compression
	}{
		{"none", 0},
		{"gzip", compress.Gzip},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			topic := "kafkago-" + c.name
			const n = 4000
			base := time.UnixMilli(1_700_000_000_000)
			msg := func(i int) kafka.Message {
				return kafka.Message{
					Key:     fmt.Appendf(nil, "k%d", i),
					Value:   fmt.Appendf(nil, "kafka-go value %d", i),
					Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.Itoa(i))}},
					Time:    base.Add(time.Duration(i) * time.Millisecond),
				}
			}

			w := &kafka.Writer{
				Addr:  kafka.TCP(addr),
				Topic: topic,
				// Message i goes to partition i%partitions, so it lands at
				// offset i/partitions.
				Balancer: kafka.BalancerFunc(func(m kafka.Message, ps ...int) int {
					i, _ := strconv.Atoi(string(m.Key[1:]))
					return ps[i%len(ps)]
				}),
				BatchSize:              500,
				BatchTimeout:           10 * time.Millisecond,
				RequiredAcks:           kafka.RequireAll,
				Compression:            c.codec,
				AllowAutoTopicCreation: true,
			}
			defer w.Close()
			msgs := make([]kafka.Message, n)
			for i := range msgs {
				msgs[i] = msg(i)
			}
			// Metadata creates the topic and answers it complete at once, so
			// the very first write must succeed: no retry loop here.
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("WriteMessages: %v", err)
			}
			if st := w.Stats(); st.Errors != 0 || st.Messages != n {
				t.Fatalf("writer stats: %d messages, %d errors; want %d, 0", st.Messages, st.Errors, n)
			}

			for p := range partitions {
				r := kafka.NewReader(kafka.ReaderConfig{
					Brokers:   []string{addr},
					Topic:     topic,
					Partition: p,
					MinBytes:  1,
					MaxBytes:  1 << 20,
					MaxWait:   100 * time.Millisecond,
				})
				for i := p; i < n; i += partitions {
					m, err := r.ReadMessage(ctx)
					if err != nil {
						r.Close()
						t.Fatalf("p%d: ReadMessage (want message %d): %v", p, i, err)
					}
					checkKafkaGoMessage(t, topic, p, int64(i/partitions), msg(i), m)
				}
				if err := r.Close(); err != nil {
					t.Errorf("p%d: close: %v", p, err)
				}
			}
		})
	}
}

func checkKafkaGoMessage(t *testing.T, topic string, p int, offset int64, want, got kafka.Message) {
	t.Helper()
	switch {
	case got.Topic != topic || got.Partition != p || got.Offset != offset:
		t.Fatalf("got %s/%d@%d, want %s/%d@%d", got.Topic, got.Partition, got.Offset, topic, p, offset)
	case !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value):
		t.Fatalf("p%d@%d: got %q=%q, want %q=%q", p, offset, got.Key, got.Value, want.Key, want.Value)
	case !got.Time.Equal(want.Time):
		t.Fatalf("p%d@%d: time %v, want %v", p, offset, got.Time, want.Time)
	case len(got.Headers) != len(want.Headers):
		t.Fatalf("p%d@%d: %d headers, want %d", p, offset, len(got.Headers), len(want.Headers))
	}
	for j, h := range want.Headers {
		if g := got.Headers[j]; g.Key != h.Key || !bytes.Equal(g.Value, h.Value) {
			t.Fatalf("p%d@%d header %d: %q=%q, want %q=%q", p, offset, j, g.Key, g.Value, h.Key, h.Value)
		}
	}
}

// TestKafkaGoAcksNone writes with RequiredAcks none (acks=0): kafka-go
// expects no response at all, so an answer from the broker would be read as
// the response to its next request. Every message must still land.
func TestKafkaGoAcksNone(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "kafkago-acks-none"
	const n = 1000
	w := &kafka.Writer{
		Addr:                   kafka.TCP(addr),
		Topic:                  topic,
		BatchSize:              100,
		BatchTimeout:           5 * time.Millisecond,
		RequiredAcks:           kafka.RequireNone,
		AllowAutoTopicCreation: true,
	}
	defer w.Close()
	for i := range 10 {
		msgs := make([]kafka.Message, n/10)
		for j := range msgs {
			msgs[j] = kafka.Message{Value: fmt.Appendf(nil, "m%d", i*len(msgs)+j)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for i := range n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("ReadMessage %d of %d: %v", i, n, err)
		}
		if m.Offset != int64(i) || string(m.Value) != fmt.Sprintf("m%d", i) {
			t.Fatalf("got %q at offset %d, want m%d at %d", m.Value, m.Offset, i, i)
		}
	}
}
