package broker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/sharebroker/sharebroker/broker"
)

// TestSaramaTransactionalProducer (end-txn, read-committed-fetch): sarama's
// transactional SyncProducer commits one transaction and aborts another; a
// read_committed sarama consumer gets the committed records only.
func TestSaramaTransactionalProducer(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	const topic = "sarama-txn"

	cfg := sarama.NewConfig()
	cfg.ClientID = "sarama-txn"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-txn-producer"
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Metadata.AllowAutoTopicCreation = true

	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer prod.Close()
	txnOf := func(prefix string, commit bool) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		for i := range 5 {
			msg := &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(prefix + strconv.Itoa(i))}
			if _, _, err := prod.SendMessage(msg); err != nil {
				t.Fatalf("SendMessage %s: %v", prefix, err)
			}
		}
		end := prod.AbortTxn
		if commit {
			end = prod.CommitTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
		}
	}
	txnOf("committed-", true)
	txnOf("aborted-", false)
	txnOf("later-", true)

	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) == 0 || got[len(got)-1] != "later-4" {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-timeout:
			t.Fatalf("read_committed got %v, never later-4", got)
		}
	}
	var want []string
	for _, prefix := range []string{"committed-", "later-"} {
		for i := range 5 {
			want = append(want, prefix+strconv.Itoa(i))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read_committed got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read_committed got %v, want %v", got, want)
		}
	}
}
