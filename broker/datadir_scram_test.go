package broker_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// scram-kept: a SCRAM user created and a --sasl-user credential deleted
// with AlterUserScramCredentials are still so after a restart, and the
// data directory holds no password.
func TestDataDirSCRAM(t *testing.T) {
	dir := t.TempDir()
	cfg := broker.Config{
		DataDir:   dir,
		Props:     map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"},
		SASLUsers: []broker.SASLUser{{Name: "alice", Password: "alice-secret"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b1 := testbroker.Start(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.ListenerAddr("PLAINTEXT").String()))
	if err != nil {
		t.Fatal(err)
	}
	altered, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx,
		[]kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}},
		[]kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "dave-secret"}})
	cl.Close()
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter: %v %+v", err, altered)
	}
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, cfg)
	sasl := b2.ListenerAddr("SASL_PLAINTEXT").String()
	produceConsumeOpts(t, sasl, kgo.SASL(scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()))
	produceConsumeOpts(t, sasl, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	refused, err := kgo.NewClient(kgo.SeedBrokers(sasl), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if err := refused.Ping(ctx); err == nil {
		t.Fatal("alice authenticated with SCRAM-SHA-256 after its deletion and a restart")
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.log"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(meta, []byte("secret")) {
		t.Fatal("the data directory holds a password")
	}
}
