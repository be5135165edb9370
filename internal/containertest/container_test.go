// Package containertest runs the sharebroker container image and drives it
// with a real client. It runs only when SHAREBROKER_CONTAINER_IMAGE names an
// image (.ci/container-test.sh builds one and sets it); otherwise it skips.
package containertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/internal/testadmin"
)

const (
	imageEnv = "SHAREBROKER_CONTAINER_IMAGE"
	topic    = "container-queue"
	groupID  = "container-workers"
	records  = 20
)

// docker runs one docker command with a bound and returns its trimmed
// output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls check until it reports done or ctx ends.
func waitFor(ctx context.Context, every time.Duration, check func() (bool, string)) (string, bool) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		done, state := check()
		if done {
			return state, true
		}
		select {
		case <-ctx.Done():
			return state, false
		case <-tick.C:
		}
	}
}

func TestContainer(t *testing.T) {
	image := os.Getenv(imageEnv)
	if image == "" {
		t.Skipf("%s is not set: run .ci/container-test.sh (make container-test)", imageEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kafkaAddr, httpAddr := freePort(t), freePort(t)
	name := fmt.Sprintf("sharebroker-test-%d", os.Getpid())

	if user, err := docker(ctx, "image", "inspect", "-f", "{{.Config.User}}", image); err != nil || user != "65532:65532" {
		t.Fatalf("image user %q (%v), want 65532:65532", user, err)
	}
	state := runHealthy(t, ctx, name,
		"-e", "SHAREBROKER_LISTEN="+kafkaAddr,
		"-e", "SHAREBROKER_HTTP="+httpAddr,
		"-e", "SHAREBROKER_CONFIG_NUM_PARTITIONS=1",
		image)
	t.Logf("container %s is %s; Kafka on %s, HTTP on %s", name, state, kafkaAddr, httpAddr)

	// Produce, then share-consume everything and accept it.
	admin, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	setGroupConfig(t, ctx, admin, "share.auto.offset.reset", "earliest")
	for i := range records {
		if err := admin.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics(topic), kgo.ShareGroup(groupID),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < records && ctx.Err() == nil {
		for _, r := range consumer.PollFetches(ctx).Records() {
			seen[string(r.Value)] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != records {
		t.Fatalf("share-consumed %d distinct records, want %d", len(seen), records)
	}
	if err := consumer.FlushAcks(ctx); err != nil {
		t.Fatalf("flush acks: %v", err)
	}
	consumer.Close()

	// The broker's own account of it, from /metrics.
	fams := scrape(t, ctx, "http://"+httpAddr+"/metrics")
	if got := counter(fams, "sharebroker_share_records_acquired_total", ""); got != records {
		t.Errorf("records acquired: %v, want %d", got, records)
	}
	if got := counter(fams, "sharebroker_share_records_acknowledged_total", "accept"); got != records {
		t.Errorf("records accepted: %v, want %d", got, records)
	}

	// A clean stop: SIGTERM, exit status 0.
	if out, err := docker(ctx, "stop", "-t", "20", name); err != nil {
		t.Fatalf("docker stop: %v: %s", err, out)
	}
	if code, err := docker(ctx, "inspect", "-f", "{{.State.ExitCode}}", name); err != nil || code != "0" {
		t.Fatalf("exit code %q (%v), want 0", code, err)
	}
}

// runHealthy starts a container called name on the host's network with
// the docker run arguments args (options, then the image), removes it when
// the test ends (logging its output if the test failed) and waits until
// its health check passes. It returns the container's state.
func runHealthy(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	out, err := docker(ctx, append([]string{"run", "-d", "--name", name, "--network", "host",
		"--health-interval", "1s", "--health-start-period", "1s"}, args...)...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := docker(context.Background(), "logs", name)
			t.Logf("container %s logs:\n%s", name, logs)
		}
		docker(context.Background(), "rm", "-f", name)
	})
	if err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	healthCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	state, ok := waitFor(healthCtx, 250*time.Millisecond, func() (bool, string) {
		s, err := docker(ctx, "inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", name)
		if err == nil && strings.HasPrefix(s, "exited") {
			cancel() // it will not become healthy
		}
		return err == nil && s == "running healthy", s
	})
	if !ok {
		t.Fatalf("container %s not healthy within 60 s: %q", name, state)
	}
	return state
}

func setGroupConfig(t *testing.T, ctx context.Context, cl *kgo.Client, name, value string) {
	t.Helper()
	testadmin.SetGroupConfig(t, ctx, cl, groupID, name, value)
}

func scrape(t *testing.T, ctx context.Context, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return fams
}

// counter returns the counter of family name whose "type" label is typ
// ("" for an unlabelled counter), or -1.
func counter(fams map[string]*dto.MetricFamily, name, typ string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		label := ""
		for _, lp := range m.Label {
			if lp.GetName() == "type" {
				label = lp.GetValue()
			}
		}
		if label == typ {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
