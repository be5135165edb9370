package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// acls-kept: ACLs CreateAcls made and DeleteAcls left are still there
// after a restart on the same data directory, listed by DescribeAcls and
// deciding requests before any client creates one again; one deleted
// stays deleted. A start without an authorizer keeps them in the
// directory for the next start that has one.
func TestDataDirACLs(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{
		"listeners":             "SASL_PLAINTEXT://127.0.0.1:0",
		"authorizer.class.name": standardAuthorizer,
		"super.users":           "User:alice",
	}
	cfg := broker.Config{DataDir: dir, Props: props, SASLUsers: []broker.SASLUser{
		{Name: "alice", Password: "alice-secret"}, {Name: "bob", Password: "bob-secret"}}}
	ctx := testCtx(t)
	client := func(b *broker.Broker, user string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	produce := func(b *broker.Broker, topic string) error {
		cl := client(b, "bob", kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}

	b1 := testbroker.Start(t, cfg)
	alice := kadm.NewClient(client(b1, "alice"))
	if _, err := alice.CreateTopic(ctx, 1, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CreateTopic(ctx, 1, 1, nil, "revoked"); err != nil {
		t.Fatal(err)
	}
	res, err := alice.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().
		Topics("kept", "revoked").Operations(kadm.OpWrite, kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("granting %+v: %v", r, r.Err)
		}
	}
	deleted, err := alice.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().
		Topics("revoked").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		t.Fatalf("deleting: %v %+v", err, deleted)
	}
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	// Without an authorizer the ACLs are not used, nor lost.
	off := cfg
	off.Props = map[string]string{"listeners": props["listeners"]}
	if err := testbroker.Close(testbroker.Start(t, off)); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, cfg)
	described, err := kadm.NewClient(client(b2, "alice")).DescribeACLs(ctx, kadm.NewACLs().
		AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().Deny().AllowHosts().DenyHosts().
		Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || described[0].Err != nil {
		t.Fatalf("describing: %v %+v", err, described)
	}
	var got []string
	for _, d := range described[0].Described {
		got = append(got, d.Name+":"+d.Operation.String())
	}
	if want := []string{"kept:WRITE", "kept:DESCRIBE", "revoked:DESCRIBE"}; len(got) != len(want) ||
		got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("after the restart DescribeAcls lists %v, want %v", got, want)
	}
	if err := produce(b2, "kept"); err != nil {
		t.Fatalf("bob producing with the kept WRITE: %v", err)
	}
	if err := produce(b2, "revoked"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob producing after WRITE was deleted and a restart: %v", err)
	}
}
