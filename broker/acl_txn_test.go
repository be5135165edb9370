package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceInTxn produces one record to topic in a committed transaction
// of transactional ID id, as cn.
func (ab *aclBroker) produceInTxn(t *testing.T, cn, topic, id string) error {
	t.Helper()
	cl := ab.client(t, cn, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("t")}).FirstErr(); err != nil {
		cl.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// Rules: api-authorization (InitProducerId, AddPartitionsToTxn, EndTxn,
// Produce with a transactional ID), by-resource-type.
func TestACLTransactionalID(t *testing.T) {
	ab := startACLBroker(t, nil)
	const topic, id = "ledger", "ledger-writer"
	ab.createTopic(t, topic)
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics(topic).Operations(kadm.OpWrite))

	// WRITE on the topic lets an idempotent producer in (InitProducerId
	// without a transactional ID needs WRITE on some topic).
	if err := ab.produceOne(t, "alice", topic); err != nil {
		t.Fatalf("idempotent produce with WRITE on the topic: %v", err)
	}
	if err := ab.produceInTxn(t, "alice", topic, id); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce without WRITE on the transactional ID: %v", err)
	}
	ab.grant(t, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().TransactionalIDs(id).Operations(kadm.OpWrite))
	if err := ab.produceInTxn(t, "alice", topic, id); err != nil {
		t.Fatalf("transactional produce with WRITE on the transactional ID: %v", err)
	}
	// The transaction is visible to whom may describe the ID.
	adm := kadm.NewClient(ab.client(t, "alice"))
	listed, err := adm.ListTransactions(testCtx(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := listed.TransactionalIDs(); len(ts) != 1 || ts[0] != id {
		t.Fatalf("alice lists %v", ts)
	}
	listed, err = kadm.NewClient(ab.client(t, "bob")).ListTransactions(testCtx(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := listed.TransactionalIDs(); len(ts) != 0 {
		t.Fatalf("bob lists %v", ts)
	}
	if got := denials(t, ab.b, "TRANSACTIONAL_ID"); got == 0 {
		t.Fatal("no TRANSACTIONAL_ID denial counted")
	}
}
