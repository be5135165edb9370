package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/sharebroker/sharebroker/broker"
)

// saramaCopier copies each record of its claims to topic B in a transaction
// of its own, with the consumed offset committed in that transaction
// (AddMessageToTxn), and stops after limit records.
type saramaCopier struct {
	prod   sarama.SyncProducer
	group  string
	limit  int64
	copied atomic.Int64
	done   chan struct{}
	err    atomic.Value
}

func (c *saramaCopier) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (c *saramaCopier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *saramaCopier) ConsumeClaim(_ sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if c.copied.Load() >= c.limit {
			return nil
		}
		fail := func(step string, err error) error {
			c.err.Store(fmt.Errorf("%s at offset %d: %w", step, msg.Offset, err))
			return err
		}
		if err := c.prod.BeginTxn(); err != nil {
			return fail("BeginTxn", err)
		}
		if _, _, err := c.prod.SendMessage(&sarama.ProducerMessage{Topic: "copy-b", Value: sarama.ByteEncoder(msg.Value)}); err != nil {
			return fail("SendMessage", err)
		}
		if err := c.prod.AddMessageToTxn(msg, c.group, nil); err != nil {
			return fail("AddMessageToTxn", err)
		}
		if err := c.prod.CommitTxn(); err != nil {
			return fail("CommitTxn", err)
		}
		if c.copied.Add(1) == c.limit {
			close(c.done)
		}
	}
	return nil
}

func saramaTxnConfig(txnID string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = txnID
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = txnID
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false // offsets go through the transactions
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Metadata.AllowAutoTopicCreation = true
	return cfg
}

// Exactly once with sarama (issue 4, end-txn, txn-offset-commit): one
// copier stops mid-way, a second one with a new transactional producer
// resumes from the offsets committed in the first one's transactions, and a
// read_committed reader of B sees every record of A exactly once.
func TestSaramaTransactionalCopyExactlyOnce(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	const n, first = 60, 25
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	plain := sarama.NewConfig()
	plain.Producer.Return.Successes = true
	plain.Metadata.AllowAutoTopicCreation = true
	src, err := sarama.NewSyncProducer([]string{addr}, plain)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := src.SendMessage(&sarama.ProducerMessage{Topic: "copy-a", Value: sarama.StringEncoder(fmt.Sprintf("r%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	src.Close()

	copyPart := func(txnID string, limit int64) {
		t.Helper()
		cfg := saramaTxnConfig(txnID)
		prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
		if err != nil {
			t.Fatalf("%s producer: %v", txnID, err)
		}
		defer prod.Close()
		grp, err := sarama.NewConsumerGroup([]string{addr}, "copiers", cfg)
		if err != nil {
			t.Fatalf("%s group: %v", txnID, err)
		}
		defer grp.Close()
		c := &saramaCopier{prod: prod, group: "copiers", limit: limit, done: make(chan struct{})}
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		consumed := make(chan error, 1)
		go func() {
			for runCtx.Err() == nil {
				if err := grp.Consume(runCtx, []string{"copy-a"}, c); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					consumed <- err
					return
				}
			}
			consumed <- nil
		}()
		select {
		case <-c.done:
		case err := <-consumed:
			t.Fatalf("%s stopped after %d records: %v", txnID, c.copied.Load(), err)
		case <-ctx.Done():
			t.Fatalf("%s copied %d of %d before the deadline (last error: %v)", txnID, c.copied.Load(), limit, c.err.Load())
		}
		stop()
		<-consumed
	}
	copyPart("copier-1", first)
	copyPart("copier-2", n-first)

	cons, err := sarama.NewConsumer([]string{addr}, saramaTxnConfig("reader"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition("copy-b", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	seen := make(map[string]int)
	for len(seen) < n {
		select {
		case m := <-pc.Messages():
			seen[string(m.Value)]++
		case err := <-pc.Errors():
			t.Fatalf("read B: %v", err)
		case <-ctx.Done():
			t.Fatalf("read_committed reader saw %d distinct records of %d", len(seen), n)
		}
	}
	for v, count := range seen {
		if count != 1 {
			t.Fatalf("%s seen %d times", v, count)
		}
	}
	// Nothing beyond the n records: B's end offsets hold exactly n records
	// plus one commit marker per transaction.
	client, err := sarama.NewClient([]string{addr}, plain)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	end, err := client.GetOffset("copy-b", 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * n); end != want {
		t.Fatalf("B ends at %d, want %d (%d records and %d commit markers)", end, want, n, n)
	}
}
