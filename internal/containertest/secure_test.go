package containertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/internal/testcerts"
)

// writeCerts makes a CA and a server certificate it signs for 127.0.0.1
// and localhost, writes server.pem and server-key.pem into a directory
// the image's user 65532 may read, and returns the directory and a pool
// trusting the CA.
func writeCerts(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	ca := testcerts.NewCA(t, "containertest CA")
	key, cert := ca.Issue(t, "localhost", "127.0.0.1")
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "certs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test's temporary directories are 0700; the container's user
	// must pass through them to reach the mounted one.
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, blocks ...*pem.Block) {
		var b []byte
		for _, blk := range blocks {
			b = append(b, pem.EncodeToMemory(blk)...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The chain: the server's certificate, then the CA's.
	write("server.pem", &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}, &pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
	write("server-key.pem", &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return dir, pool
}

// The image serves SASL_SSL with certificates from a mounted directory
// and a user from the environment, as the README shows; a kgo client with
// SCRAM-SHA-512, trusting the CA and checking the host name, produces and
// consumes through it, and a wrong password is refused.
func TestContainerSASLSSL(t *testing.T) {
	image := os.Getenv(imageEnv)
	if image == "" {
		t.Skipf("%s is not set: run .ci/container-test.sh (make container-test)", imageEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	certs, pool := writeCerts(t)
	addr, httpAddr := freePort(t), freePort(t)
	name := fmt.Sprintf("sharebroker-test-sasl-%d", os.Getpid())
	runHealthy(t, ctx, name, "-v", certs+":/certs:ro",
		"-e", "SHAREBROKER_LISTENERS=SASL_SSL://"+addr,
		"-e", "SHAREBROKER_HTTP="+httpAddr,
		"-e", "SHAREBROKER_TLS_CERT=/certs/server.pem",
		"-e", "SHAREBROKER_TLS_KEY=/certs/server-key.pem",
		"-e", "SHAREBROKER_SASL_USERS=alice:alice-secret",
		image)

	client := func(pass string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}),
			kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha512Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	prod := client("alice-secret", kgo.DefaultProduceTopic("secure"), kgo.AllowAutoTopicCreation())
	for i := range records {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "s%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce over SASL_SSL: %v", err)
		}
	}
	cons := client("alice-secret", kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < records; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records over SASL_SSL before the deadline", got, records)
		}
		for _, r := range fs.Records() {
			if want := fmt.Sprintf("s%d", r.Offset); string(r.Value) != want {
				t.Fatalf("offset %d holds %q, want %q", r.Offset, r.Value, want)
			}
			got++
		}
	}
	pingCtx, pingCancel := context.WithTimeout(ctx, 10*time.Second)
	defer pingCancel()
	if err := client("wrong").Ping(pingCtx); err == nil {
		t.Fatal("a wrong password authenticated")
	}
}

// A data directory on a named volume survives SIGKILL (docker kill): a new
// container on the same volume serves every record acknowledged before,
// at its offset.
func TestContainerDataDirVolume(t *testing.T) {
	image := os.Getenv(imageEnv)
	if image == "" {
		t.Skipf("%s is not set: run .ci/container-test.sh (make container-test)", imageEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	volume := fmt.Sprintf("sharebroker-test-data-%d", os.Getpid())
	if out, err := docker(ctx, "volume", "create", volume); err != nil {
		t.Fatalf("docker volume create: %v: %s", err, out)
	}
	// Registered first, so it runs after the containers are removed.
	t.Cleanup(func() { docker(context.Background(), "volume", "rm", "-f", volume) })
	start := func(name string) string {
		addr, httpAddr := freePort(t), freePort(t)
		runHealthy(t, ctx, name, "-v", volume+":/data",
			"-e", "SHAREBROKER_DATA_DIR=/data",
			"-e", "SHAREBROKER_LISTEN="+addr,
			"-e", "SHAREBROKER_HTTP="+httpAddr,
			"-e", "SHAREBROKER_CONFIG_NUM_PARTITIONS=1",
			image)
		return addr
	}
	first := fmt.Sprintf("sharebroker-test-data1-%d", os.Getpid())
	addr := start(first)
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kept"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	for i := range records {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "k%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	prod.Close()
	if out, err := docker(ctx, "kill", "--signal", "KILL", first); err != nil {
		t.Fatalf("docker kill: %v: %s", err, out)
	}
	if code, err := docker(ctx, "wait", first); err != nil || code != "137" {
		t.Fatalf("killed container exit code %q (%v), want 137 (SIGKILL)", code, err)
	}

	addr = start(fmt.Sprintf("sharebroker-test-data2-%d", os.Getpid()))
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < records; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after SIGKILL and a new container, %d of %d records before the deadline", got, records)
		}
		for _, r := range fs.Records() {
			if want := fmt.Sprintf("k%d", r.Offset); string(r.Value) != want {
				t.Fatalf("offset %d holds %q, want %q", r.Offset, r.Value, want)
			}
			got++
		}
	}
}
