package broker_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL users are principals too: User:alice (a super user here) manages
// SCRAM credentials and ACLs; User:bob needs ACLs for everything.
// Rules: api-authorization (DescribeUserScramCredentials,
// AlterUserScramCredentials, Produce), super-users.
func TestACLWithSASLUsers(t *testing.T) {
	b, _ := startSASLBroker(t, nil, map[string]string{
		"authorizer.class.name": standardAuthorizer,
		"super.users":           "User:alice",
	})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	client := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx := testCtx(t)
	alice := kadm.NewClient(client("alice", "alice-secret"))
	bob := kadm.NewClient(client("bob", "bob-secret"))

	if _, err := bob.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob describing SCRAM users: %v", err)
	}
	altered, err := bob.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "eve", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "eve"}})
	if err == nil {
		err = altered["eve"].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob altering SCRAM users: %v %+v", err, altered)
	}
	if _, err := alice.DescribeUserSCRAMs(ctx); err != nil {
		t.Fatalf("alice (super user) describing SCRAM users: %v", err)
	}

	if _, err := alice.CreateTopic(ctx, 1, 1, nil, "sasl-acl"); err != nil {
		t.Fatal(err)
	}
	produce := func() error {
		cl := client("bob", "bob-secret", kgo.DefaultProduceTopic("sasl-acl"), kgo.DisableIdempotentWrite())
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob producing without ACLs: %v", err)
	}
	res, err := alice.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("sasl-acl").Operations(kadm.OpWrite))
	if err != nil || res[0].Err != nil {
		t.Fatalf("alice granting: %v %+v", err, res)
	}
	if err := produce(); err != nil {
		t.Fatalf("bob producing with WRITE: %v", err)
	}
}
