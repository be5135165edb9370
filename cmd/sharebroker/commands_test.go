package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// When the test binary is started with this variable set it runs main, so
// tests can exec "sharebroker" without building it separately.
const runMainEnv = "SHAREBROKER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		limitOpenFiles()
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runCommand(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func TestVersionCommand(t *testing.T) {
	out, err := runCommand(t, context.Background(), "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "sharebroker ") {
		t.Fatalf("version printed %q", out)
	}
}

// Rule: a bad flag fails at start with a message that names it.
func TestBadFlagsFailNamingThem(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown property", []string{"--config", "no.such.property=1"}, `"no.such.property"`},
		{"property not a number", []string{"--config", "num.partitions=abc"}, "num.partitions"},
		{"property out of range", []string{"--config", "num.partitions=0"}, "num.partitions"},
		{"property bad boolean", []string{"--config", "auto.create.topics.enable=yes"}, "auto.create.topics.enable"},
		{"config without equals", []string{"--config", "num.partitions"}, "--config"},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
		{"bad log format", []string{"--log-format", "xml"}, "--log-format"},
		{"bad listen address", []string{"--listen", "nowhere"}, "listen address"},
		{"bad advertise address", []string{"--advertise", "host-without-port"}, "advertised address"},
		{"listener SASL without users", []string{"--listeners", "SASL_SSL://127.0.0.1:0"}, "--sasl-user"},
		{"sasl user without password", []string{"--sasl-user", "alice"}, "--sasl-user"},
		{"sasl user twice", []string{"--sasl-user", "alice:a", "--sasl-user", "alice:b"}, "alice"},
		{"tls cert without key", []string{"--listeners", "SSL://127.0.0.1:0", "--tls-cert", "c.pem"}, "--tls-key"},
		{"tls key without cert", []string{"--listeners", "SSL://127.0.0.1:0", "--tls-key", "k.pem"}, "--tls-cert"},
		{"tls ca out without SSL", []string{"--tls-ca-out", "/tmp/none.pem"}, "--tls-ca-out"},
		{"client auth without client CA", []string{"--listeners", "SSL://127.0.0.1:0", "--config", "ssl.client.auth=required"}, "--tls-client-ca"},
		{"listener protocol unknown", []string{"--listeners", "A://127.0.0.1:0", "--listener-security-protocol-map", "A:KERBEROS"}, "listener.security.protocol.map"},
		{"advertised listener unknown", []string{"--advertised-listeners", "OTHER://x:1"}, "advertised.listeners"},
		{"negative node id", []string{"--node-id", "-1"}, "node ID"},
		{"unknown flag", []string{"--no-such-flag"}, "--no-such-flag"},
		{"no nodes", []string{"--nodes", "0"}, "--nodes"},
		{"node ports past 65535", []string{"--listen", "127.0.0.1:65535", "--nodes", "2"}, "65535"},
		{"share session timeout not above heartbeat", []string{"--config", "group.share.session.timeout.ms=1000"}, "group.share"},
		{"share property out of range", []string{"--config", "group.share.delivery.count.limit=11"}, "group.share.delivery.count.limit"},
		{"test API without HTTP", []string{"--enable-test-api", "--http", ""}, "--enable-test-api"},
		{"bad http address", []string{"--http", "nowhere"}, "http address"},
		{"serve rejects arguments", []string{"serve", "extra"}, "extra"},
		// docs/security.md authorizer-class.
		{"unknown authorizer class", []string{"--config", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer"}, "kafka.security.authorizer.AclAuthorizer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := runCommand(t, ctx, tc.args...)
			if err == nil {
				t.Fatalf("%v: started; want an error naming %s", tc.args, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v: error %q does not name %s", tc.args, err, tc.want)
			}
		})
	}
}

var listeningAddr = regexp.MustCompile(`msg=listening .*addr=(127\.0\.0\.1:\d+)`)

// startProcess execs the test binary as sharebroker with args and returns
// the process and the address it logged that it listens on.
func startProcess(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	// A free HTTP port: the default one may be taken by another broker.
	cmd := exec.Command(os.Args[0], append(args, "--http", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case addr := <-found:
		return cmd, addr
	case <-time.After(20 * time.Second):
		t.Fatal("broker process did not log its listener within 20 s")
	}
	return nil, ""
}

// Rule: SIGTERM (and SIGINT) shut the broker down cleanly: exit status 0.
func TestServeAnswersThenStopsOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, addr := startProcess(t, "serve", "--listen", "127.0.0.1:0")
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
			if err != nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
				t.Fatalf("ApiVersions: %v %+v", err, resp)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err != nil {
					t.Fatalf("exit after %v: %v", sig, err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("still running 15 s after %v", sig)
			}
		})
	}
}

// The bare command serves like `serve`, and a bad flag makes the process
// exit non-zero with the message on stderr.
func TestProcessExitCodes(t *testing.T) {
	cmd, _ := startProcess(t, "--listen", "127.0.0.1:0")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bare command: %v", err)
	}

	bad := exec.Command(os.Args[0], "--config", "no.such.property=1")
	bad.Env = append(os.Environ(), runMainEnv+"=1")
	var stderr bytes.Buffer
	bad.Stderr = &stderr
	bad.Stdout = io.Discard
	err := bad.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("bad flag: want exit status 1, got %v", err)
	}
	if !strings.Contains(stderr.String(), "no.such.property") {
		t.Fatalf("stderr %q does not name the property", stderr.String())
	}
}

// `serve --nodes 3` runs three nodes in the process: Metadata through the
// first lists all three, each on a port of its own.
func TestServeNodes(t *testing.T) {
	_, addr := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--nodes", "3")
	brokers := rawconn.Dial(t, addr).Request(&kmsg.MetadataRequest{Version: 12}).(*kmsg.MetadataResponse).Brokers
	ports := map[int32]bool{}
	for i, b := range brokers {
		ports[b.Port] = b.NodeID == int32(i)
	}
	if len(brokers) != 3 || len(ports) != 3 || !ports[brokers[2].Port] {
		t.Fatalf("brokers %+v: want nodes 0, 1, 2 on ports of their own", brokers)
	}
}
