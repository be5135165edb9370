package sharebroker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	sharebroker "github.com/sharebroker/sharebroker/testcontainers"
)

// imageEnv names the image under test, as internal/containertest's does:
// .ci/container-test.sh builds one from this tree and sets it.
const imageEnv = "SHAREBROKER_CONTAINER_IMAGE"

func TestMain(m *testing.M) {
	// testcontainers-go starts a reaper container (testcontainers/ryuk)
	// unless told not to; no image can be pulled where these tests run, and
	// every test terminates its own containers.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	os.Exit(m.Run())
}

// image returns the image under test, or skips the test.
func image(t *testing.T) string {
	t.Helper()
	img := os.Getenv(imageEnv)
	if img == "" {
		t.Skipf("%s is not set: run .ci/container-test.sh (make container-test)", imageEnv)
	}
	return img
}

// run starts the image for the rest of the test. The daemon CI starts has
// no bridge network, so the container uses the host's unless the test
// passes network options of its own (bridge).
func run(t *testing.T, ctx context.Context, bridge bool, opts ...testcontainers.ContainerCustomizer) *sharebroker.Container {
	t.Helper()
	if !bridge {
		opts = append([]testcontainers.ContainerCustomizer{sharebroker.WithHostNetwork()}, opts...)
	}
	ctr, err := sharebroker.Run(ctx, image(t), opts...)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return ctr
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, ctx context.Context, ctr *sharebroker.Container, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	seeds, err := ctr.Brokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// setGroupConfig sets one GROUP config (IncrementalAlterConfigs, resource
// type GROUP), e.g. share.auto.offset.reset=earliest so a share group reads
// records produced before it joined. The module's own users would pass the
// image's seeding flags instead (WithArgs).
func setGroupConfig(t *testing.T, ctx context.Context, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, &value
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set %s=%s on group %s: %v %+v", name, value, group, err, resp)
	}
}
