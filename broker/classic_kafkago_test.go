package broker_test

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestKafkaGoGroupResumesFromLastCommit is the kgo and sarama resume test
// with a segmentio/kafka-go Reader in a consumer group (commit-checks,
// commit-stored, fetch): kafka-go speaks its own, older versions of
// JoinGroup, SyncGroup, Heartbeat, OffsetCommit and OffsetFetch. The first
// reader commits half of what each partition gave it, reads on, and closes
// without committing the rest; the next reader resumes at the last commit.
func TestKafkaGoGroupResumesFromLastCommit(t *testing.T) {
	const topic, group, parts, per = "resume-kafkago", "g-kafkago", 3, 30
	addr, ctx, _, adm := groupBroker(t, topic, parts, parts*per)
	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{addr},
			GroupID:           group,
			Topic:             topic,
			CommitInterval:    0, // commits are explicit and synchronous
			StartOffset:       kafka.FirstOffset,
			MaxWait:           100 * time.Millisecond,
			HeartbeatInterval: time.Second,
			SessionTimeout:    10 * time.Second,
			RebalanceTimeout:  10 * time.Second,
		})
	}

	first := resumeRun{seen: map[recKey]bool{}}
	byKey := map[recKey]kafka.Message{}
	r1 := newReader()
	read := func(r *kafka.Reader, into map[recKey]bool, upTo int) {
		for len(into) < upTo {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("fetch after %d records: %v", len(into), err)
			}
			k := recKey{int32(m.Partition), m.Offset}
			if into[k] {
				t.Fatalf("p%d@%d delivered twice to one reader", k.partition, k.offset)
			}
			into[k], byKey[k] = true, m
		}
	}
	read(r1, first.seen, 30)
	first.marked = markPoint(first.seen)
	var commit []kafka.Message
	for p, at := range first.marked {
		if at > 0 {
			commit = append(commit, byKey[recKey{p, at - 1}])
		} else {
			delete(first.marked, p)
		}
	}
	if err := r1.CommitMessages(ctx, commit...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	awaitCommitted(t, ctx, adm, group, topic, first.marked)
	read(r1, first.seen, 60)
	if err := r1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	committed := committedOffsets(t, ctx, adm, group, topic)
	want := 0
	for p := range int32(parts) {
		want += per - int(committed[p])
	}
	r2 := newReader()
	defer r2.Close()
	second := map[recKey]bool{}
	read(r2, second, want)
	checkResume(t, parts*per, per, first, committed, second)
}
