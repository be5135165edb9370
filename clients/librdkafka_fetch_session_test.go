//go:build cgo

package clients

import (
	"maps"
	"slices"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestLibrdkafkaManyPartitions assigns 128 partitions to one librdkafka
// consumer and reads to the end of each (docs/log.md
// fetch-session-incremental). librdkafka 2.11 fetches without a session
// (Fetch v16 with SessionId 0 and epoch -1, seen at the broker), so every
// fetch lists every partition and must be answered with each: a partition
// left out of an answer would never report its end.
func TestLibrdkafkaManyPartitions(t *testing.T) {
	e := startRdkafka(t)
	const topic, partitions, perPartition = "many", 128, 5
	e.createTopic(topic, partitions)
	sent := e.produce(e.producer(nil), topic, makeRecs("many", partitions, perPartition))

	c := e.consumer("many-reader", "many-reader", kafka.ConfigMap{"enable.partition.eof": true, "fetch.max.bytes": 16 << 10, "message.max.bytes": 16 << 10})
	if err := c.Assign(allPartitions(topic, partitions, kafka.OffsetBeginning)); err != nil {
		t.Fatalf("assign: %v", err)
	}
	got, eof := readToEOF(t, c, topic, partitions)
	sortRecs(got)
	sortRecs(sent)
	if !slices.Equal(got, sent) {
		t.Fatalf("read %d records, want the %d sent", len(got), len(sent))
	}
	if want := wantEnds(partitions, perPartition); !maps.Equal(eof, want) {
		t.Fatalf("end of partition reported at %v, want %v", eof, want)
	}
}
