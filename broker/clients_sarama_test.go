package broker_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/sharebroker/sharebroker/broker"
)

// TestSaramaRoundTrip sends records through sarama's SyncProducer and reads
// them back with a PartitionConsumer (no group), checking every record's
// offset, key, value, headers and timestamp. Sarama picks request versions
// from its configured Kafka version (2.8 by default) rather than from
// ApiVersions alone, so this covers versions kgo never sends.
func TestSaramaRoundTrip(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": "2"}})
	for _, c := range []struct {
		name  string
		codec sarama.CompressionCodec
	}{
		{"none", sarama.CompressionNone},
		{"zstd", sarama.CompressionZSTD},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "sarama-" + c.name
			const perPartition = 2500
			base := time.UnixMilli(1_700_000_000_000)
			msg := func(p int32, i int) *sarama.ProducerMessage {
				return &sarama.ProducerMessage{
					Topic:     topic,
					Partition: p,
					Key:       sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i)),
					Value:     sarama.StringEncoder(fmt.Sprintf("value %d of partition %d", i, p)),
					Headers: []sarama.RecordHeader{
						{Key: []byte("i"), Value: []byte(strconv.Itoa(i))},
						{Key: []byte("p"), Value: []byte(strconv.Itoa(int(p)))},
					},
					Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				}
			}

			cfg := sarama.NewConfig()
			cfg.ClientID = "sarama-round-trip"
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Compression = c.codec
			cfg.Producer.Flush.MaxMessages = 500
			cfg.Consumer.Return.Errors = true
			cfg.Consumer.MaxWaitTime = 100 * time.Millisecond

			prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewSyncProducer: %v", err)
			}
			defer prod.Close()
			for p := range int32(2) {
				var msgs []*sarama.ProducerMessage
				for i := range perPartition {
					msgs = append(msgs, msg(p, i))
				}
				if err := prod.SendMessages(msgs); err != nil {
					t.Fatalf("SendMessages: %v", err)
				}
				// SendMessages fills in where each one landed; one
				// producer and one partition means consecutive offsets.
				for i, m := range msgs {
					if m.Partition != p || m.Offset != int64(i) {
						t.Fatalf("message %d acknowledged at p%d@%d, want p%d@%d", i, m.Partition, m.Offset, p, i)
					}
				}
			}

			cons, err := sarama.NewConsumer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewConsumer: %v", err)
			}
			defer cons.Close()
			deadline := time.After(60 * time.Second)
			for p := range int32(2) {
				pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
				if err != nil {
					t.Fatalf("ConsumePartition %d: %v", p, err)
				}
				for i := range perPartition {
					var m *sarama.ConsumerMessage
					select {
					case m = <-pc.Messages():
					case err := <-pc.Errors():
						t.Fatalf("p%d: consumer error: %v", p, err)
					case <-deadline:
						t.Fatalf("p%d: got %d of %d messages before the deadline", p, i, perPartition)
					}
					checkSaramaMessage(t, msg(p, i), m, int64(i))
				}
				if hw := pc.HighWaterMarkOffset(); hw != perPartition {
					t.Errorf("p%d: high watermark %d, want %d", p, hw, perPartition)
				}
				if err := pc.Close(); err != nil {
					t.Errorf("p%d: close: %v", p, err)
				}
			}
		})
	}
}

func checkSaramaMessage(t *testing.T, want *sarama.ProducerMessage, got *sarama.ConsumerMessage, offset int64) {
	t.Helper()
	wantKey, _ := want.Key.Encode()
	wantValue, _ := want.Value.Encode()
	switch {
	case got.Topic != want.Topic || got.Partition != want.Partition || got.Offset != offset:
		t.Fatalf("got %s/%d@%d, want %s/%d@%d", got.Topic, got.Partition, got.Offset, want.Topic, want.Partition, offset)
	case !bytes.Equal(got.Key, wantKey) || !bytes.Equal(got.Value, wantValue):
		t.Fatalf("@%d: got %q=%q, want %q=%q", offset, got.Key, got.Value, wantKey, wantValue)
	case !got.Timestamp.Equal(want.Timestamp):
		t.Fatalf("@%d: timestamp %v, want %v", offset, got.Timestamp, want.Timestamp)
	case len(got.Headers) != len(want.Headers):
		t.Fatalf("@%d: %d headers, want %d", offset, len(got.Headers), len(want.Headers))
	}
	for j, h := range want.Headers {
		if g := got.Headers[j]; !bytes.Equal(g.Key, h.Key) || !bytes.Equal(g.Value, h.Value) {
			t.Fatalf("@%d header %d: %q=%q, want %q=%q", offset, j, g.Key, g.Value, h.Key, h.Value)
		}
	}
}

// TestSaramaIdempotentProducer uses sarama's idempotent producer, which
// sends its own InitProducerId and sequence numbers, and checks that every
// message lands once and in order.
func TestSaramaIdempotentProducer(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	const topic = "sarama-idempotent"
	const n = 3000
	cfg := sarama.NewConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.MaxMessages = 200
	cfg.Net.MaxOpenRequests = 1 // sarama requires it for idempotence
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer prod.Close()
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("m%d", i))}
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	for i, m := range msgs {
		if m.Offset != int64(i) {
			t.Fatalf("message %d acknowledged at offset %d", i, m.Offset)
		}
	}

	// The batches on the log carry the producer ID sarama was given and
	// consecutive sequences.
	batches := dialRaw(t, addr).fetchAll(topic, 0)
	if countRecords(batches) != n {
		t.Fatalf("log holds %d records, want %d", countRecords(batches), n)
	}
	for _, b := range batches {
		if b.ProducerID < 0 || int64(b.FirstSequence) != b.FirstOffset {
			t.Fatalf("batch at %d: producer %d sequence %d; want an ID and sequence == offset", b.FirstOffset, b.ProducerID, b.FirstSequence)
		}
	}
}
