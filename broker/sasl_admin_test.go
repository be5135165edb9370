package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// Rule: scram-admin. kadm creates a SCRAM user at run time on the
// PLAINTEXT listener, the user authenticates over SASL_PLAINTEXT, describe
// lists it, and deleting its credential refuses it again.
func TestSCRAMCredentialsAdmin(t *testing.T) {
	b, _ := startSASLBroker(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("PLAINTEXT").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "dave-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter: %v %+v", err, altered)
	}
	produceConsumeOpts(t, b.ListenerAddr("SASL_PLAINTEXT").String(),
		kgo.SASL(scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()))

	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["dave"]; len(d.CredInfos) != 1 || d.CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) {
		t.Fatalf("dave: %+v", d)
	}
	if a := described["alice"]; len(a.CredInfos) != 2 || a.CredInfos[0].Iterations != 4096 {
		t.Fatalf("alice: %+v", a)
	}
	one, err := adm.DescribeUserSCRAMs(ctx, "nobody")
	if err != nil || one["nobody"].Err != kerr.ResourceNotFound ||
		one["nobody"].ErrMessage != "Attempt to describe a user credential that does not exist: nobody" {
		t.Fatalf("nobody: %v %+v", err, one)
	}

	if altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha512}}, nil); err != nil || altered.Error() != nil {
		t.Fatalf("delete: %v %+v", err, altered)
	}
	refused, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if err := refused.Ping(ctx); err == nil {
		t.Fatal("dave authenticated after its credential was deleted")
	}
}

// Rule: scram-admin. Each refusal of AlterUserScramCredentials and
// DescribeUserScramCredentials, field by field.
func TestSCRAMCredentialsAdminErrors(t *testing.T) {
	b, _ := startSASLBroker(t, nil, nil)
	c := rawconn.Dial(t, b.ListenerAddr("PLAINTEXT").String())
	up := func(name string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iters, []byte("salt"), make([]byte, 32)
		return u
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 1), del("ghost", 2), del("", 1)}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("erin", 1, 4096), up("few", 1, 4095), up("many", 2, 16385), up("mech", 3, 4096), up("alice", 2, 4096),
		up("twice", 1, 4096), up("twice", 2, 4096),
	}
	resp := c.Request(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	type res struct {
		user string
		code int16
		msg  string
	}
	want := []res{
		{"erin", 0, ""},
		{"ghost", kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
		{"", kerr.UnacceptableCredential.Code, "Username must not be empty"},
		{"few", kerr.UnacceptableCredential.Code, "Too few iterations"},
		{"many", kerr.UnacceptableCredential.Code, "Too many iterations"},
		{"mech", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		{"alice", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		{"twice", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want), resp.Results)
	}
	for i, r := range resp.Results {
		var msg string
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if got := (res{r.User, r.ErrorCode, msg}); got != want[i] {
			t.Errorf("result %d: %+v, want %+v", i, got, want[i])
		}
	}

	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"alice", "bob", "alice", "erin"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		dreq.Users = append(dreq.Users, u)
	}
	dresp := c.Request(dreq).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(dresp.Results) != 3 {
		t.Fatalf("describe: %+v", dresp.Results)
	}
	// alice: the failed request left both of its credentials.
	if r := dresp.Results[0]; r.User != "alice" || r.ErrorCode != kerr.DuplicateResource.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "Cannot describe SCRAM credentials for the same user twice in a single request: alice" {
		t.Fatalf("alice: %+v", r)
	}
	if r := dresp.Results[1]; r.User != "bob" || r.ErrorCode != 0 || len(r.CredentialInfos) != 2 {
		t.Fatalf("bob: %+v", r)
	}
	if r := dresp.Results[2]; r.User != "erin" || len(r.CredentialInfos) != 1 || r.CredentialInfos[0].Mechanism != 1 {
		t.Fatalf("erin: %+v", r)
	}
}
