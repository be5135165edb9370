package broker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
)

// TestShareReadCommittedSkipsAbortedRecords (share-read-committed): a share
// group with share.isolation.level=read_committed never delivers records
// of an aborted transaction, nor of one still open, and delivers committed
// ones.
func TestShareReadCommittedSkipsAbortedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, addr := startBroker(t, broker.Config{})
	const topic, groupID = "src-topic", "src-group"
	txnCreateTopics(ctx, t, addr, 1, topic)

	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	setGroupConfig(t, ctx, admin, groupID, "share.auto.offset.reset", "earliest")
	setGroupConfig(t, ctx, admin, groupID, "share.isolation.level", "read_committed")

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("src-producer"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	txnOf := func(prefix string, end kgo.TransactionEndTry) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(prefix+strconv.Itoa(i))).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", prefix, err)
			}
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			t.Fatalf("end %s: %v", prefix, err)
		}
	}
	plain := func(v string) {
		t.Helper()
		if err := admin.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	txnOf("aborted-", kgo.TryAbort)
	txnOf("committed-", kgo.TryCommit)
	plain("end-1")

	cons := newShareConsumer(t, addr, topic, groupID)
	seen := map[string]bool{}
	consumeUntil := func(want string) {
		t.Helper()
		for !seen[want] {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v; seen %v", want, ctx.Err(), seen)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)] = true
				r.Ack(kgo.AckAccept)
			})
			if err := cons.FlushAcks(ctx); err != nil {
				t.Fatalf("flush acks: %v", err)
			}
		}
	}
	consumeUntil("end-1")

	// A transaction left open holds everything after it back; the consumer
	// keeps polling meanwhile and must get none of it.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, kgo.StringRecord("open-0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain("held-back")
	pollCtx, cancelPoll := context.WithTimeout(ctx, time.Second)
	cons.PollFetches(pollCtx).EachRecord(func(r *kgo.Record) {
		t.Errorf("delivered %q while a transaction before it is open", r.Value)
	})
	cancelPoll()
	if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	consumeUntil("held-back")

	for i := range 5 {
		if !seen["committed-"+strconv.Itoa(i)] {
			t.Errorf("committed-%d not delivered", i)
		}
	}
	for v := range seen {
		if strings.HasPrefix(v, "aborted-") || strings.HasPrefix(v, "open-") {
			t.Errorf("delivered %q from an aborted transaction", v)
		}
	}
}
