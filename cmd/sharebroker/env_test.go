package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
)

// configFrom parses args as serve's flags, applies environ and builds the
// broker config.
func configFrom(t *testing.T, args, environ []string) (broker.Config, error) {
	t.Helper()
	return serveConfigFrom(t, args, environ, false)
}

// serveConfigFrom is configFrom, reading the apache/kafka image's
// environment too when kafkaEnv is set, as serve does with --kafka-env.
func serveConfigFrom(t *testing.T, args, environ []string, kafkaEnv bool) (broker.Config, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "serve"}
	var f serveFlags
	addServeFlags(cmd, &f)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(cmd, environ); err != nil {
		return broker.Config{}, err
	}
	if kafkaEnv {
		if err := applyKafkaEnv(cmd, &f, environ); err != nil {
			return broker.Config{}, err
		}
	}
	return buildConfig(f, io.Discard)
}

func TestEnvironmentFillsUnsetFlags(t *testing.T) {
	cfg, err := configFrom(t,
		[]string{"--listen", "127.0.0.1:1234", "--config", "num.partitions=5"},
		[]string{
			"SHAREBROKER_LISTEN=0.0.0.0:9092", // the flag wins
			"SHAREBROKER_ADVERTISE=broker:9092",
			"SHAREBROKER_HTTP=",
			"SHAREBROKER_NODE_ID=7",
			"SHAREBROKER_CONFIG_NUM_PARTITIONS=9", // --config wins
			"SHAREBROKER_CONFIG_LOG_RETENTION_MS=60000",
			"SHAREBROKER_CONFIG_GROUP_SHARE_RECORD_LOCK_DURATION_MS=20000",
			"SHAREBROKER_TEST_RUN_MAIN=1", // names no flag: ignored
			"OTHER=1",
		})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:1234" || cfg.Advertise != "broker:9092" || cfg.HTTP != "" || cfg.NodeID != 7 {
		t.Fatalf("config %+v", cfg)
	}
	want := map[string]string{"num.partitions": "5", "log.retention.ms": "60000", "group.share.record.lock.duration.ms": "20000"}
	if len(cfg.Props) != len(want) {
		t.Fatalf("props %v, want %v", cfg.Props, want)
	}
	for k, v := range want {
		if cfg.Props[k] != v {
			t.Fatalf("props %v, want %v", cfg.Props, want)
		}
	}
}

// Kafka's listener properties come as flags, as --config properties or as
// variables of either kind; a flag wins over the property.
func TestListenerFlagsAndVariables(t *testing.T) {
	cfg, err := configFrom(t,
		[]string{"--listeners", "HOST://0.0.0.0:9092,DOCKER://0.0.0.0:29092", "--config", "advertised.listeners=HOST://ignored:1"},
		[]string{
			"SHAREBROKER_ADVERTISED_LISTENERS=HOST://localhost:9092,DOCKER://broker:29092",
			"SHAREBROKER_CONFIG_LISTENER_SECURITY_PROTOCOL_MAP=HOST:PLAINTEXT,DOCKER:PLAINTEXT",
		})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"listeners":                      "HOST://0.0.0.0:9092,DOCKER://0.0.0.0:29092",
		"advertised.listeners":           "HOST://localhost:9092,DOCKER://broker:29092",
		"listener.security.protocol.map": "HOST:PLAINTEXT,DOCKER:PLAINTEXT",
	}
	for k, v := range want {
		if cfg.Props[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg.Props[k], v)
		}
	}
}

func TestEnvironmentBadValueNamesVariable(t *testing.T) {
	_, err := configFrom(t, nil, []string{"SHAREBROKER_ENABLE_TEST_API=maybe"})
	if err == nil || !strings.Contains(err.Error(), "SHAREBROKER_ENABLE_TEST_API") {
		t.Fatalf("error %v does not name the variable", err)
	}
	cfg, err := configFrom(t, nil, []string{"SHAREBROKER_ENABLE_TEST_API=true", "SHAREBROKER_HTTP=127.0.0.1:0"})
	if err != nil || !cfg.EnableTestAPI {
		t.Fatalf("test API from the environment: %v %+v", err, cfg)
	}
	// An unknown property from the environment fails at start like --config.
	cfg, err = configFrom(t, nil, []string{"SHAREBROKER_CONFIG_NO_SUCH_THING=1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broker.New(cfg); err == nil || !strings.Contains(err.Error(), "no.such.thing") {
		t.Fatalf("unknown property from the environment: %v", err)
	}
}

func TestHealthcheck(t *testing.T) {
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	addr := b.HTTPAddr().String()
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := runCommand(t, ctx, "healthcheck", "--http", addr); err != nil || !strings.Contains(out, "ready") {
		t.Fatalf("healthcheck of a ready broker: %v %q", err, out)
	}
	// A container's broker listens on all interfaces; the check asks loopback.
	if _, err := runCommand(t, ctx, "healthcheck", "--http", "0.0.0.0:"+port); err != nil {
		t.Fatalf("healthcheck of 0.0.0.0: %v", err)
	}
	t.Setenv("SHAREBROKER_HTTP", addr)
	if _, err := runCommand(t, ctx, "healthcheck"); err != nil {
		t.Fatalf("healthcheck with SHAREBROKER_HTTP: %v", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := runCommand(t, ctx, "healthcheck", "--http", addr); err == nil {
		t.Fatal("healthcheck of a stopped broker succeeded")
	}
}

// The process exits 1 when the broker is not there.
func TestHealthcheckExitStatus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "healthcheck", "--http", addr)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("healthcheck of nothing: want exit status 1, got %v", err)
	}
}

// --nodes and SHAREBROKER_NODES set Config.Nodes; the flag wins, and the
// default is one node.
func TestNodesFlagAndEnv(t *testing.T) {
	for _, tc := range []struct {
		args, environ []string
		want          int
	}{
		{nil, nil, 1},
		{[]string{"--nodes", "3"}, nil, 3},
		{nil, []string{"SHAREBROKER_NODES=4"}, 4},
		{[]string{"--nodes", "2"}, []string{"SHAREBROKER_NODES=4"}, 2},
	} {
		cfg, err := configFrom(t, tc.args, tc.environ)
		if err != nil || cfg.Nodes != tc.want {
			t.Fatalf("%v %v: nodes %d, %v; want %d", tc.args, tc.environ, cfg.Nodes, err, tc.want)
		}
	}
	if _, err := configFrom(t, []string{"--nodes", "0"}, nil); err == nil || !strings.Contains(err.Error(), "--nodes") {
		t.Fatalf("--nodes 0: %v", err)
	}
}

// The TLS flags come as SHAREBROKER_TLS_* variables; ssl.client.auth is a
// Kafka property.
func TestTLSFlagsAndVariables(t *testing.T) {
	cfg, err := configFrom(t,
		[]string{"--tls-cert", "flag.pem"},
		[]string{
			"SHAREBROKER_TLS_CERT=ignored.pem", // the flag wins
			"SHAREBROKER_TLS_KEY=key.pem",
			"SHAREBROKER_TLS_CLIENT_CA=ca.pem",
			"SHAREBROKER_CONFIG_SSL_CLIENT_AUTH=required",
		})
	if err != nil {
		t.Fatal(err)
	}
	want := broker.TLSConfig{CertFile: "flag.pem", KeyFile: "key.pem", ClientCAFile: "ca.pem"}
	if cfg.TLS != want || cfg.Props["ssl.client.auth"] != "required" {
		t.Fatalf("tls %+v props %v, want %+v and ssl.client.auth=required", cfg.TLS, cfg.Props, want)
	}
	if _, err := configFrom(t, nil, []string{"SHAREBROKER_TLS_KEY=key.pem"}); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("a key without a certificate: %v", err)
	}
}

// --tls-ca-out writes the generated CA; a client trusting it reaches the
// SSL listener with hostname verification.
func TestServeTLSCAOut(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	_, addr := startProcess(t, "serve", "--listeners", "SSL://127.0.0.1:0", "--tls-ca-out", caFile)
	data, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("--tls-ca-out wrote %q: no PEM certificate", data)
	}
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("handshake trusting the written CA: %v", err)
	}
	nc.Close()
}

// SHAREBROKER_SASL_USERS gives several users in one variable; --sasl-user
// on the command line wins over it.
func TestEnvironmentSASLUsers(t *testing.T) {
	cfg, err := configFrom(t, nil, []string{"SHAREBROKER_SASL_USERS=alice:a-pw, bob:b:pw"})
	if err != nil {
		t.Fatal(err)
	}
	want := []broker.SASLUser{{Name: "alice", Password: "a-pw"}, {Name: "bob", Password: "b:pw"}}
	if len(cfg.SASLUsers) != 2 || cfg.SASLUsers[0] != want[0] || cfg.SASLUsers[1] != want[1] {
		t.Fatalf("users %+v, want %+v", cfg.SASLUsers, want)
	}
	cfg, err = configFrom(t, []string{"--sasl-user", "carol:c"}, []string{"SHAREBROKER_SASL_USERS=alice:a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.SASLUsers) != 1 || cfg.SASLUsers[0].Name != "carol" {
		t.Fatalf("users %+v, want carol only", cfg.SASLUsers)
	}
	if _, err := configFrom(t, nil, []string{"SHAREBROKER_SASL_USERS=alice"}); err == nil || strings.Contains(err.Error(), "alice:") {
		t.Fatalf("a user without a password: %v", err)
	}
}

// The process with a SASL_PLAINTEXT listener and users from
// SHAREBROKER_SASL_USERS: kgo authenticates with SCRAM-SHA-512 as each
// user, and not with a wrong password. Rules (docs/security.md):
// sasl-users, sasl-failure-closes.
func TestServeSASLUsersFromEnvironment(t *testing.T) {
	t.Setenv("SHAREBROKER_SASL_USERS", "alice:alice-secret,bob:bob:secret")
	_, addr := startProcess(t, "serve", "--listeners", "SASL_PLAINTEXT://127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, u := range [][2]string{{"alice", "alice-secret"}, {"bob", "bob:secret"}, {"bob", "wrong"}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: u[0], Pass: u[1]}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if wrong := u[1] == "wrong"; (err != nil) != wrong {
			t.Fatalf("%s with password %q: %v", u[0], u[1], err)
		}
	}
}

// SHAREBROKER_SASL_USER (one user, the flag's own variable) and
// SHAREBROKER_SASL_USERS add up.
func TestEnvironmentSASLUserAndUsers(t *testing.T) {
	cfg, err := configFrom(t, nil, []string{"SHAREBROKER_SASL_USER=carol:c", "SHAREBROKER_SASL_USERS=alice:a,bob:b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.SASLUsers) != 3 {
		t.Fatalf("users %+v, want carol, alice and bob", cfg.SASLUsers)
	}
}
