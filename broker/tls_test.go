package broker_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
)

// lockedLog collects log lines from the broker's goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) lines(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), substr)
}

// startSSLBroker starts a broker with a PLAINTEXT and an SSL listener and
// the HTTP server; it returns the broker and its log.
func startSSLBroker(t *testing.T, tc broker.TLSConfig, props map[string]string) (*broker.Broker, *lockedLog) {
	t.Helper()
	logs := &lockedLog{}
	if props == nil {
		props = map[string]string{}
	}
	props["listeners"] = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
	b, _ := startBroker(t, broker.Config{
		HTTP:   "127.0.0.1:0",
		TLS:    tc,
		Props:  props,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	return b, logs
}

// fetchCA gets GET /v1/tls/ca.pem into a pool.
func fetchCA(t *testing.T, b *broker.Broker) *x509.CertPool {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr().String() + "/v1/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/tls/ca.pem: %d %s", resp.StatusCode, body)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(body) {
		t.Fatalf("GET /v1/tls/ca.pem: no certificate in %q", body)
	}
	return pool
}

// produceConsume produces three records to a new topic and consumes them
// back, exactly, over TLS when tc is not nil.
func produceConsume(t *testing.T, addr string, tc *tls.Config) {
	t.Helper()
	var opts []kgo.Opt
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	produceConsumeOpts(t, addr, opts...)
}

var topicSeq struct {
	sync.Mutex
	n int
}

// handshake dials addr with tc and handshakes within a deadline.
func handshake(addr string, tc *tls.Config) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	c := tls.Client(nc, tc)
	if err := c.Handshake(); err != nil {
		return err
	}
	// TLS 1.3 reports a rejected client certificate on the first read.
	c.Write([]byte{0, 0, 0, 0})
	_, err = c.Read(make([]byte, 1))
	if err == io.EOF || err != nil && strings.Contains(err.Error(), "deadline") {
		return nil
	}
	return err
}

// waitLog waits, within a deadline, for n log lines containing substr.
func waitLog(t *testing.T, logs *lockedLog, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for logs.lines(substr) < n {
		if time.Now().After(deadline) {
			t.Fatalf("want %d log lines with %q, got %d", n, substr, logs.lines(substr))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Rules: generated-certificate, ca-served, handshake-fails-one.
func TestSSLGeneratedCA(t *testing.T) {
	b, logs := startSSLBroker(t, broker.TLSConfig{}, nil)
	pool := fetchCA(t, b)
	ssl := b.ListenerAddr("SSL").String()
	produceConsume(t, ssl, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	produceConsume(t, ssl, &tls.Config{RootCAs: pool, ServerName: "localhost"})

	// A client that does not trust the CA fails at once; the broker logs
	// one line and keeps serving.
	if err := handshake(ssl, &tls.Config{ServerName: "127.0.0.1"}); err == nil {
		t.Fatal("handshake without the CA succeeded")
	}
	waitLog(t, logs, "TLS handshake failed", 1)

	// Garbage instead of a ClientHello closes that connection only.
	nc, err := net.Dial("tcp", ssl)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	io.Copy(io.Discard, nc) // returns when the broker closes it
	nc.Close()
	waitLog(t, logs, "TLS handshake failed", 2)

	produceConsume(t, b.ListenerAddr("PLAINTEXT").String(), nil)
	produceConsume(t, ssl, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if n := logs.lines("TLS handshake failed"); n != 2 {
		t.Fatalf("%d handshake failure lines, want 2", n)
	}
}

// Rule: ca-served (404 without a generated CA).
func TestSSLCAAbsentIsNotFound(t *testing.T) {
	b, _ := startBroker(t, broker.Config{HTTP: "127.0.0.1:0"})
	resp, err := http.Get("http://" + b.HTTPAddr().String() + "/v1/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/tls/ca.pem without SSL: %d, want 404", resp.StatusCode)
	}
}

// testCA is a CA made in the test that signs certificates.
type testCA struct {
	cert *x509.Certificate
	key  ed25519.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for subject; server certificates cover
// 127.0.0.1. It returns the certificate and its PEM files.
func (ca *testCA) issue(t *testing.T, serial int64, subject pkix.Name, server bool) (tls.Certificate, []byte, []byte) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Rules: client-auth, principal.
func TestSSLClientAuth(t *testing.T) {
	clientCA := newTestCA(t)
	alice, _, _ := clientCA.issue(t, 2, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, false)
	caFile := writeFile(t, "client-ca.pem", clientCA.pem)

	t.Run("required", func(t *testing.T) {
		b, logs := startSSLBroker(t, broker.TLSConfig{ClientCAFile: caFile}, map[string]string{"ssl.client.auth": "required"})
		pool := fetchCA(t, b)
		ssl := b.ListenerAddr("SSL").String()
		produceConsume(t, ssl, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{alice}})
		if err := handshake(ssl, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err == nil {
			t.Fatal("a client without a certificate was served")
		}
		waitLog(t, logs, "TLS handshake failed", 1)
		waitLog(t, logs, "principal=\"User:CN=alice,OU=eng\"", 1)
	})
	t.Run("requested", func(t *testing.T) {
		b, logs := startSSLBroker(t, broker.TLSConfig{ClientCAFile: caFile}, map[string]string{"ssl.client.auth": "requested"})
		pool := fetchCA(t, b)
		ssl := b.ListenerAddr("SSL").String()
		produceConsume(t, ssl, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{alice}})
		waitLog(t, logs, "principal=\"User:CN=alice,OU=eng\"", 1)
		// A live connection without a certificate is ANONYMOUS.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(ssl), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("a client without a certificate under requested: %v", err)
		}
		if got := broker.Principals(b); !slices.Contains(got, "User:ANONYMOUS") {
			t.Fatalf("principals %q: no User:ANONYMOUS", got)
		}
		if n := logs.lines("TLS handshake failed"); n != 0 {
			t.Fatalf("%d handshake failures under requested", n)
		}
		// Rule requested-invalid-cert: a certificate from another CA is
		// refused, not taken as ANONYMOUS.
		mallory, _, _ := newTestCA(t).issue(t, 3, pkix.Name{CommonName: "mallory"}, false)
		if err := handshake(ssl, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{mallory}}); err == nil {
			t.Fatal("a certificate from another CA was accepted under requested")
		}
		waitLog(t, logs, "TLS handshake failed", 1)
	})
	t.Run("required principal on the connection", func(t *testing.T) {
		b, _ := startSSLBroker(t, broker.TLSConfig{ClientCAFile: caFile}, map[string]string{"ssl.client.auth": "required"})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SSL").String()),
			kgo.DialTLSConfig(&tls.Config{RootCAs: fetchCA(t, b), ServerName: "localhost", Certificates: []tls.Certificate{alice}}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if got := broker.Principals(b); len(got) == 0 || got[0] != "User:CN=alice,OU=eng" {
			t.Fatalf("principals %q, want User:CN=alice,OU=eng", got)
		}
	})
}

// Rule: given-certificate.
func TestSSLGivenCertificate(t *testing.T) {
	ca := newTestCA(t)
	_, certPEM, keyPEM := ca.issue(t, 4242, pkix.Name{CommonName: "given-server"}, true)
	b, _ := startSSLBroker(t, broker.TLSConfig{CertFile: writeFile(t, "c.pem", certPEM), KeyFile: writeFile(t, "k.pem", keyPEM)}, nil)
	if b.CAPEM() != nil {
		t.Fatal("a CA was generated although a certificate was given")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", b.ListenerAddr("SSL").String(),
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	leaf := nc.ConnectionState().PeerCertificates[0]
	if leaf.SerialNumber.Int64() != 4242 || leaf.Subject.CommonName != "given-server" {
		t.Fatalf("served certificate serial %v subject %v", leaf.SerialNumber, leaf.Subject)
	}
	produceConsume(t, b.ListenerAddr("SSL").String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
}

// Rules: given-certificate (one of two), client-auth, sasl-needs-a-way-in.
func TestSSLConfigErrors(t *testing.T) {
	for name, cfg := range map[string]broker.Config{
		"cert without key":   {TLS: broker.TLSConfig{CertFile: "x.pem"}, Props: map[string]string{"listeners": "SSL://127.0.0.1:0"}},
		"key without cert":   {TLS: broker.TLSConfig{KeyFile: "x.pem"}, Props: map[string]string{"listeners": "SSL://127.0.0.1:0"}},
		"client auth no CA":  {Props: map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": "required"}},
		"bad client auth":    {Props: map[string]string{"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": "always"}},
		"sasl_ssl":           {Props: map[string]string{"listeners": "SASL_SSL://127.0.0.1:0"}},
		"sasl_plaintext map": {Props: map[string]string{"listeners": "A://127.0.0.1:0", "listener.security.protocol.map": "A:SASL_PLAINTEXT"}},
	} {
		if _, err := broker.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.HasPrefix(name, "sasl") && !strings.Contains(err.Error(), "no client could authenticate") {
			t.Errorf("%s: %v does not say no client could authenticate", name, err)
		}
	}
}

// Rule: one-certificate-per-process. With several nodes every node's SSL listener serves the one generated
// certificate; a client trusting its CA reaches every node.
func TestSSLNodesShareCertificate(t *testing.T) {
	b, _ := startBroker(t, broker.Config{HTTP: "127.0.0.1:0", Nodes: 3,
		Props: map[string]string{"listeners": "SSL://127.0.0.1:0", "num.partitions": "3"}})
	pool := fetchCA(t, b)
	addrs := broker.NodeListenerAddrs(b, "SSL")
	if len(addrs) != 3 {
		t.Fatalf("SSL listeners %v, want one a node", addrs)
	}
	for _, addr := range addrs {
		if err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: "localhost"}); err != nil {
			t.Fatalf("node at %s: %v", addr, err)
		}
	}
	produceConsume(t, b.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
}
