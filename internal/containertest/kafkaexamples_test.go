package containertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/sharebroker/sharebroker/internal/testcerts"
)

// kafkaExamples are Kafka's single-node compose examples
// (testdata/kafka-docker-examples, copied from apache/kafka's
// docker/examples) and how a client reaches each advertised listener:
// TLS for the SSL listeners, SASL PLAIN as the JAAS file's user alice for
// the SASL ones.
var kafkaExamples = []struct {
	name       string
	advertised []string // as the example advertises them
	tls, sasl  map[string]bool
}{
	{name: "plaintext", advertised: []string{"localhost:9092", "broker:19092"}},
	{name: "ssl", advertised: []string{"localhost:9093", "broker:19093"},
		tls: map[string]bool{"localhost:9093": true, "broker:19093": true}},
	{name: "sasl_plaintext", advertised: []string{"localhost:9094", "broker:19094"},
		sasl: map[string]bool{"localhost:9094": true, "broker:19094": true}},
	{name: "file-input", advertised: []string{"localhost:9092", "localhost:9093", "broker:19092"},
		tls: map[string]bool{"localhost:9093": true}},
}

// The compose files' port entries, e.g. '9092:9092' or "9093:9093".
var composePort = regexp.MustCompile(`(['"])(\d+):(\d+)(['"])`)

// Rules (docs/kafka-env.md): kafka-env-name, kafka-env-image-script,
// kafka-env-file-input, kraft-accepted, controller-listener-skipped,
// kafka-keystore, kafka-jaas-users. Each of Kafka's single-node compose
// examples runs with docker-compose against the image, unchanged but for
// two things: the image, which the files take from ${IMAGE} as Kafka's
// README runs them, and the host side of each port mapping, which becomes
// 127.0.0.1 and a free port ('9092:9092' is '127.0.0.1:P:9092'), so the
// test binds no fixed port and nothing beyond loopback. Then a kgo client
// connects through every advertised listener (the names the example
// advertises led to the published port, or to the container's address on
// the compose network for the broker:PORT ones), checks the advertised
// address and node ID Metadata answers, produces a record and fetches it.
// The SSL examples' keystores are generated here as PKCS12, as keytool
// writes them, under Kafka's file names and password.
func TestContainerKafkaExamples(t *testing.T) {
	image := os.Getenv(imageEnv)
	if image == "" {
		t.Skipf("%s is not set: run .ci/container-test.sh (make container-test)", imageEnv)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker-compose is not installed")
		}
		t.Skip("docker-compose is not installed")
	}
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/kafka-docker-examples")); err != nil {
		t.Fatal(err)
	}
	ca := testcerts.NewCA(t, "kafka examples CA")
	clientCert := writeKafkaSecrets(t, filepath.Join(root, "fixtures", "secrets"), ca)
	// The image's user 65532 reads the mounted fixtures.
	if err := filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, ex := range kafkaExamples {
		start := time.Now()
		t.Run(ex.name, func(t *testing.T) {
			runKafkaExample(t, image, filepath.Join(root, "docker-compose-files", "single-node", ex.name),
				ex.advertised, ex.tls, ex.sasl, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}})
		})
		t.Logf("%s: %v from docker-compose up to the end of down", ex.name, time.Since(start).Round(time.Millisecond))
	}
}

func runKafkaExample(t *testing.T, image, dir string, advertised []string, useTLS, useSASL map[string]bool, tlsCfg *tls.Config) {
	file := filepath.Join(dir, "docker-compose.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]string{} // container port -> host port
	data = composePort.ReplaceAllFunc(data, func(m []byte) []byte {
		g := composePort.FindSubmatch(m)
		_, hostPort, _ := net.SplitHostPort(freePort(t))
		published[string(g[3])] = hostPort
		return fmt.Appendf(nil, "%s127.0.0.1:%s:%s%s", g[1], hostPort, g[3], g[4])
	})
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	project := fmt.Sprintf("sbkafka%d", os.Getpid())
	// Not under ctx: the clean-up runs after it is cancelled.
	compose := func(args ...string) (string, error) {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, "docker-compose", append([]string{"-p", project, "-f", file}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "IMAGE="+image)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := compose("logs", "--no-color")
			t.Logf("compose logs:\n%s", logs)
		}
		if out, err := compose("down", "-v", "-t", "5"); err != nil {
			t.Logf("docker-compose down: %v: %s", err, out)
		}
	})
	if out, err := compose("up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v: %s", err, out)
	}
	ip, err := docker(ctx, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", "broker")
	if err != nil || net.ParseIP(ip) == nil {
		t.Fatalf("container address %q: %v", ip, err)
	}
	// Where each advertised name leads from this host.
	real := map[string]string{}
	for _, a := range advertised {
		host, port, _ := net.SplitHostPort(a)
		if host == "localhost" {
			real[a] = net.JoinHostPort("127.0.0.1", published[port])
		} else {
			real[a] = net.JoinHostPort(ip, port)
		}
	}
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if r, ok := real[host]; ok {
			host = r
		}
		return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, host)
	}
	topic := "example-" + strconv.Itoa(os.Getpid())
	for i, a := range advertised {
		opts := []kgo.Opt{kgo.SeedBrokers(a), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}
		if useTLS[a] {
			host, _, _ := net.SplitHostPort(a)
			c := tlsCfg.Clone()
			c.ServerName = host
			tlsDial := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: c}
			opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
				if r, ok := real[host]; ok {
					host = r
				}
				return tlsDial.DialContext(ctx, network, host)
			}))
		} else {
			opts = append(opts, kgo.Dialer(dial))
		}
		if useSASL[a] {
			opts = append(opts, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		// The broker may still be starting: Metadata is retried until it
		// answers, for 30 s at most.
		var m *kmsg.MetadataResponse
		readyCtx, readyCancel := context.WithTimeout(ctx, 30*time.Second)
		waitFor(readyCtx, 200*time.Millisecond, func() (bool, string) {
			m, err = kmsg.NewPtrMetadataRequest().RequestWith(readyCtx, cl)
			return err == nil, ""
		})
		readyCancel()
		if err != nil {
			t.Fatalf("metadata through %s: %v", a, err)
		}
		if len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 || net.JoinHostPort(m.Brokers[0].Host, strconv.Itoa(int(m.Brokers[0].Port))) != a {
			t.Fatalf("metadata through %s: brokers %+v", a, m.Brokers)
		}
		want := "through " + a
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(want)}).FirstErr(); err != nil {
			t.Fatalf("produce through %s: %v", a, err)
		}
		var got []string
		for len(got) <= i && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil && ctx.Err() == nil {
				t.Fatalf("fetch through %s: %v", a, err)
			}
			for _, r := range fs.Records() {
				got = append(got, string(r.Value))
			}
		}
		if len(got) <= i || got[i] != want {
			t.Fatalf("fetched through %s: %q, want %q last", a, got, want)
		}
	}
}

// kafkaExamplePassword is the password of Kafka's example keystores and
// truststore (its fixtures' *_creds files, and file-input's
// server.properties).
const kafkaExamplePassword = "abcdefgh"

// writeKafkaSecrets writes what the examples' fixtures/secrets holds, under
// Kafka's names: the broker's keystore (a certificate for localhost and
// broker), the truststore of client certificates' CA, and the three
// password files; it returns a client certificate that CA signed.
func writeKafkaSecrets(t *testing.T, dir string, ca *testcerts.CA) tls.Certificate {
	t.Helper()
	serverKey, serverCert := ca.Issue(t, "localhost", "broker")
	clientKey, clientCert := ca.Issue(t, "client")
	ks, err := pkcs12.Modern.Encode(serverKey, serverCert, []*x509.Certificate{ca.Cert}, kafkaExamplePassword)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, kafkaExamplePassword)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"kafka01.keystore.jks":   ks,
		"kafka.truststore.jks":   ts,
		"kafka_keystore_creds":   []byte(kafkaExamplePassword),
		"kafka_ssl_key_creds":    []byte(kafkaExamplePassword),
		"kafka_truststore_creds": []byte(kafkaExamplePassword),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tls.Certificate{Certificate: [][]byte{clientCert.Raw}, PrivateKey: clientKey}
}

// The README's table lists every variable the examples set, and nothing
// they do not (it needs no image: it reads the files).
func TestKafkaExampleVariablesInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "<!-- kafka-example-variables:begin -->")
	table, _, ok2 := strings.Cut(table, "<!-- kafka-example-variables:end -->")
	if !ok || !ok2 {
		t.Fatal("README: the kafka-example-variables table's markers are missing")
	}
	inTable := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		inTable[m[1]] = true
	}
	inExamples := map[string]bool{}
	files, err := filepath.Glob("testdata/kafka-docker-examples/docker-compose-files/single-node/*/docker-compose.yml")
	if err != nil || len(files) != 4 {
		t.Fatalf("examples %v (%v), want 4", files, err)
	}
	variable := regexp.MustCompile(`(?m)^\s+((?:KAFKA_|CLUSTER_ID)[A-Z_]*):`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variable.FindAllStringSubmatch(string(data), -1) {
			inExamples[m[1]] = true
			if !inTable[m[1]] {
				t.Errorf("%s: %s is not in the README's table", f, m[1])
			}
		}
	}
	for v := range inTable {
		if !inExamples[v] {
			t.Errorf("the README's table lists %s, which no example sets", v)
		}
	}
}
