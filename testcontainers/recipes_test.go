package sharebroker_test

// The CI recipes of docs/ci.md are files (deploy/compose.yml,
// deploy/ci/github-actions.yml, deploy/ci/gitlab-ci.yml); these tests read
// them as YAML, check that what each tells the broker agrees with how its
// clients reach it, and, given an image, run the compose file with
// docker-compose and the GitHub Actions service as the runner would.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"
)

// imageHealthcheck is the Dockerfile's HEALTHCHECK command.
var imageHealthcheck = []string{"CMD", "/sharebroker", "healthcheck"}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
		Healthcheck struct {
			Test        []string `yaml:"test"`
			Interval    string   `yaml:"interval"`
			Timeout     string   `yaml:"timeout"`
			Retries     int      `yaml:"retries"`
			StartPeriod string   `yaml:"start_period"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// docs/ci.md ci-advertised-address and ci-health-before-tests: the compose
// file's HOST listener advertises its published port, its health check is
// the image's, and it runs: up -d, healthy, produce, down.
func TestRecipeCompose(t *testing.T) {
	var f composeFile
	readYAML(t, "../deploy/compose.yml", &f)
	b, ok := f.Services["broker"]
	if !ok {
		t.Fatalf("no broker service: %+v", f)
	}
	if !strings.Contains(b.Image, "${SHAREBROKER_IMAGE") {
		t.Errorf("image %q: want it overridable by SHAREBROKER_IMAGE", b.Image)
	}
	if strings.Join(b.Healthcheck.Test, " ") != strings.Join(imageHealthcheck, " ") {
		t.Errorf("healthcheck %v, want the image's %v", b.Healthcheck.Test, imageHealthcheck)
	}
	// The HOST listener's published port is the one it advertises.
	wantPorts := []string{"${SHAREBROKER_KAFKA_PORT:-9092}:9092", "${SHAREBROKER_HTTP_PORT:-9644}:9644"}
	if strings.Join(b.Ports, ",") != strings.Join(wantPorts, ",") {
		t.Errorf("ports %v, want %v", b.Ports, wantPorts)
	}
	if adv := b.Environment["SHAREBROKER_ADVERTISED_LISTENERS"]; !strings.Contains(adv, "HOST://localhost:${SHAREBROKER_KAFKA_PORT:-9092}") {
		t.Errorf("advertised listeners %q do not name the published HOST port", adv)
	}

	img := image(t)
	if _, err := exec.LookPath("docker-compose"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker-compose is not installed (.ci/container-test.sh installs it)")
		}
		t.Skip("docker-compose is not installed")
	}
	ctx := testContext(t)
	kafkaPort, httpPort := freeLoopbackPort(t), freeLoopbackPort(t)
	project := fmt.Sprintf("sbrecipe%d", os.Getpid())
	env := append(os.Environ(), "SHAREBROKER_IMAGE="+img,
		"SHAREBROKER_KAFKA_PORT="+strconv.Itoa(kafkaPort), "SHAREBROKER_HTTP_PORT="+strconv.Itoa(httpPort))
	compose := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", project, "-f", "../deploy/compose.yml"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if t.Failed() {
			logs, _ := compose(ctx, "logs", "--no-color")
			t.Logf("compose logs:\n%s", logs)
		}
		if out, err := compose(ctx, "down", "--volumes", "--timeout", "10"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})
	if out, err := compose(ctx, "up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	id, err := compose(ctx, "ps", "-q", "broker")
	if err != nil {
		t.Fatalf("docker-compose ps: %v\n%s", err, id)
	}
	waitHealthy(t, ctx, strings.TrimSpace(id))
	produceThrough(t, ctx, fmt.Sprintf("localhost:%d", kafkaPort), "recipe-compose", 3)
}

type githubWorkflow struct {
	Jobs map[string]struct {
		Services map[string]struct {
			Image   string            `yaml:"image"`
			Ports   []string          `yaml:"ports"`
			Env     map[string]string `yaml:"env"`
			Options string            `yaml:"options"`
		} `yaml:"services"`
		RunsOn string           `yaml:"runs-on"`
		Steps  []map[string]any `yaml:"steps"`
	} `yaml:"jobs"`
	Name string `yaml:"name"`
	On   any    `yaml:"on"`
}

// docs/ci.md ci-advertised-address and ci-health-before-tests: the
// service advertises localhost and its published port, and run as the
// runner runs it, it turns healthy and takes records.
func TestRecipeGitHubActions(t *testing.T) {
	var w githubWorkflow
	readYAML(t, "../deploy/ci/github-actions.yml", &w)
	svc, ok := w.Jobs["test"].Services["kafka"]
	if !ok {
		t.Fatalf("no jobs.test.services.kafka: %+v", w)
	}
	// Steps run on the runner: the advertised address must be localhost
	// and the port published to the image's listener (9092).
	host, port, err := net.SplitHostPort(svc.Env["SHAREBROKER_ADVERTISE"])
	if err != nil || host != "localhost" {
		t.Fatalf("SHAREBROKER_ADVERTISE %q: want localhost:PORT", svc.Env["SHAREBROKER_ADVERTISE"])
	}
	if !contains(svc.Ports, port+":9092") || !contains(svc.Ports, "9644:9644") {
		t.Errorf("ports %v do not publish %s to 9092 and 9644", svc.Ports, port)
	}
	opts := strings.Fields(svc.Options)
	if len(opts)%2 != 0 {
		t.Fatalf("options %q: want --flag value pairs", svc.Options)
	}
	for i := 0; i < len(opts); i += 2 {
		if !strings.HasPrefix(opts[i], "--health-") {
			t.Errorf("option %s: only health settings are expected", opts[i])
		}
	}

	// Run the service as the runner does: docker run with its env, ports
	// (free ones here, the advertised port following) and options.
	img := image(t)
	ctx := testContext(t)
	network := fmt.Sprintf("sbrecipe%d", os.Getpid())
	if out, err := dockerCLI(ctx, "network", "create", network); err != nil {
		t.Skipf("this daemon cannot make a bridge network: %v %s", err, out)
	}
	t.Cleanup(func() { dockerCLI(context.Background(), "network", "rm", network) })
	kafkaPort, httpPort := freeLoopbackPort(t), freeLoopbackPort(t)
	args := []string{"run", "-d", "--network", network,
		"-p", fmt.Sprintf("127.0.0.1:%d:9092", kafkaPort), "-p", fmt.Sprintf("127.0.0.1:%d:9644", httpPort)}
	for k, v := range svc.Env {
		if k == "SHAREBROKER_ADVERTISE" {
			v = fmt.Sprintf("localhost:%d", kafkaPort)
		}
		args = append(args, "-e", k+"="+v)
	}
	args = append(append(args, opts...), img)
	id, err := dockerCLI(ctx, args...)
	if id != "" {
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := dockerCLI(context.Background(), "logs", id)
				t.Logf("service logs:\n%s", logs)
			}
			dockerCLI(context.Background(), "rm", "-f", id)
		})
	}
	if err != nil {
		t.Fatalf("docker run: %v %s", err, id)
	}
	waitHealthy(t, ctx, id)
	produceThrough(t, ctx, fmt.Sprintf("localhost:%d", kafkaPort), "recipe-github", 3)
}

type gitlabCI map[string]struct {
	Image    string `yaml:"image"`
	Services []struct {
		Name      string            `yaml:"name"`
		Alias     string            `yaml:"alias"`
		Variables map[string]string `yaml:"variables"`
	} `yaml:"services"`
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
}

// docs/ci.md ci-advertised-address: the job's container reaches the service by its alias, so that is the
// host the broker must advertise, on the image's listener port; no job
// variable may be KAFKA_*, since job variables reach the service too.
func TestRecipeGitLabCI(t *testing.T) {
	var c gitlabCI
	readYAML(t, "../deploy/ci/gitlab-ci.yml", &c)
	job, ok := c["test"]
	if !ok || len(job.Services) != 1 {
		t.Fatalf("want a job test with one service: %+v", c)
	}
	svc := job.Services[0]
	if !strings.Contains(svc.Name, "sharebroker") || svc.Alias == "" {
		t.Fatalf("service %+v: want the sharebroker image and an alias", svc)
	}
	adv := svc.Variables["SHAREBROKER_ADVERTISE"]
	if adv != svc.Alias+":9092" {
		t.Errorf("SHAREBROKER_ADVERTISE %q, want %s:9092 (the alias, the image's listener port)", adv, svc.Alias)
	}
	if job.Variables["BROKERS"] != adv {
		t.Errorf("the job dials %q, the broker advertises %q", job.Variables["BROKERS"], adv)
	}
	for k := range job.Variables {
		if strings.HasPrefix(k, "KAFKA_") {
			t.Errorf("job variable %s reaches the service, which may read it as a Kafka property", k)
		}
	}
}

// docs/ci.md quotes each recipe whole, under a comment naming its file.
func TestCIDocQuotesRecipes(t *testing.T) {
	doc, err := os.ReadFile("../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"deploy/ci/github-actions.yml", "deploy/ci/gitlab-ci.yml", "deploy/compose.yml"} {
		data, err := os.ReadFile("../" + path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, []byte("```yaml\n# "+path+"\n"+string(data)+"```\n")) {
			t.Errorf("docs/ci.md does not quote %s as it is", path)
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func dockerCLI(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// waitHealthy waits up to 60 s for Docker to report the container healthy.
func waitHealthy(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	state := ""
	for {
		s, err := dockerCLI(ctx, "inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", id)
		if err == nil {
			state = s
		}
		switch {
		case state == "running healthy":
			return
		case strings.HasPrefix(state, "exited"):
			t.Fatalf("container %s exited: %s", id, state)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("container %s not healthy within 60 s: %q", id, state)
		case <-tick.C:
		}
	}
}

// produceThrough produces n records to topic through addr and checks the
// broker advertised addr back in Metadata.
func produceThrough(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce through %s: %v", addr, err)
		}
	}
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))) != addr {
		t.Fatalf("Metadata brokers %+v, want the one at %s", md.Brokers, addr)
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
