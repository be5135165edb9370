// Package sharebroker runs the sharebroker container image from a Go test
// with testcontainers-go, in the style of its Kafka and Redpanda modules:
//
//	ctr, err := sharebroker.Run(ctx, "sharebroker:dev")
//	defer testcontainers.TerminateContainer(ctr)
//	seeds, err := ctr.Brokers(ctx)
//	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
//
// Run picks free host ports before it starts the container and publishes
// each Kafka and HTTP port at the same number on the host, so the broker can
// advertise the address clients use (the apache/kafka image needs a
// start-up script for that; this image has no shell). It waits until
// /readyz answers 200. The test control API (--enable-test-api) is on, behind a
// random bearer token, so a test can move the broker's clock
// (AdvanceClock) and partition leaders (MoveLeader).
//
// The module has its own go.mod so that sharebroker's module does not
// depend on testcontainers-go. Where no image can be pulled, turn off
// testcontainers-go's reaper container: TESTCONTAINERS_RYUK_DISABLED=true
// (containers are then removed only by TerminateContainer).
package sharebroker

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Container is a running sharebroker container.
type Container struct {
	testcontainers.Container
	brokers  []string // node i's advertised HOST:PORT
	httpAddr string
	token    string
	caPEM    []byte
	testAPI  bool
	client   *http.Client
}

// Run starts the image img (built from this repository with `make docker`:
// sharebroker:dev) and waits until the broker is ready. opts are this
// package's Options and any testcontainers.ContainerCustomizer, applied
// after Run's own settings. On an error after the container was created it
// returns the container too, for testcontainers.TerminateContainer.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	settings := defaultOptions()
	for _, opt := range opts {
		if apply, ok := opt.(Option); ok {
			if err := apply(&settings); err != nil {
				return nil, fmt.Errorf("sharebroker option: %w", err)
			}
		}
	}
	bindHost := "0.0.0.0"
	if settings.hostNetwork {
		bindHost = "127.0.0.1"
	}
	advertise := settings.advertiseHost
	if advertise == "" {
		advertise = "127.0.0.1"
	}
	ports, err := freePorts(bindHost, settings.nodes)
	if err != nil {
		return nil, err
	}
	kafkaPort, httpPort := ports[0], ports[len(ports)-1]
	token, err := randomToken()
	if err != nil {
		return nil, err
	}

	protocol := "PLAINTEXT"
	switch {
	case settings.tls && len(settings.saslUsers) > 0:
		protocol = "SASL_SSL"
	case settings.tls:
		protocol = "SSL"
	case len(settings.saslUsers) > 0:
		protocol = "SASL_PLAINTEXT"
	}
	env := map[string]string{}
	for k, v := range settings.env {
		env[k] = v
	}
	// Variables rather than flags: the image's HEALTHCHECK runs
	// `sharebroker healthcheck`, which finds the HTTP address in
	// SHAREBROKER_HTTP.
	env["SHAREBROKER_LISTENERS"] = fmt.Sprintf("%s://%s:%d", protocol, bindHost, kafkaPort)
	env["SHAREBROKER_ADVERTISED_LISTENERS"] = fmt.Sprintf("%s://%s:%d", protocol, advertise, kafkaPort)
	env["SHAREBROKER_HTTP"] = fmt.Sprintf("%s:%d", bindHost, httpPort)
	env["SHAREBROKER_HTTP_TOKEN"] = token
	if settings.nodes > 1 {
		env["SHAREBROKER_NODES"] = strconv.Itoa(settings.nodes)
	}
	if settings.testAPI {
		env["SHAREBROKER_ENABLE_TEST_API"] = "true"
	}
	if len(settings.saslUsers) > 0 {
		env["SHAREBROKER_SASL_USERS"] = strings.Join(settings.saslUsers, ",")
	}

	var exposed []string
	bindings := network.PortMap{}
	for _, p := range ports {
		spec := fmt.Sprintf("%d/tcp", p)
		exposed = append(exposed, spec)
		port, err := network.ParsePort(spec)
		if err != nil {
			return nil, err
		}
		b := network.PortBinding{HostPort: strconv.Itoa(p)}
		if settings.advertiseHost == "" {
			// Published on loopback only, where it is advertised.
			b.HostIP = netip.MustParseAddr("127.0.0.1")
		}
		bindings[port] = []network.PortBinding{b}
	}

	moduleOpts := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(append([]string{"serve"}, settings.args...)...),
		testcontainers.WithEnv(env),
		testcontainers.WithExposedPorts(exposed...),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			// The image checks every 10 s; a test that waits for Docker's
			// "healthy" should not. The check itself stays the image's.
			c.Healthcheck = &container.HealthConfig{Interval: time.Second, StartPeriod: time.Second}
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if settings.hostNetwork {
				hc.NetworkMode = "host"
				return
			}
			hc.PortBindings = bindings
		}),
		testcontainers.WithEndpointSettingsModifier(func(eps map[string]*network.EndpointSettings) {
			// testcontainers-go attaches every container to its default
			// network; a container on the host's network must join none.
			if settings.hostNetwork {
				clear(eps)
			}
		}),
		testcontainers.WithWaitStrategy(readyStrategy{url: fmt.Sprintf("http://%s:%d/readyz", advertise, httpPort), timeout: time.Minute}),
	}
	for _, f := range settings.seedFiles {
		moduleOpts = append(moduleOpts, testcontainers.WithFiles(testcontainers.ContainerFile{
			HostFilePath: f, ContainerFilePath: path.Join(seedDir, filepath.Base(f)), FileMode: 0o644,
		}))
	}
	moduleOpts = append(moduleOpts, opts...)

	ctr, err := testcontainers.Run(ctx, img, moduleOpts...)
	var c *Container
	if ctr != nil {
		c = &Container{
			Container: ctr,
			httpAddr:  fmt.Sprintf("%s:%d", advertise, httpPort),
			token:     token,
			testAPI:   settings.testAPI,
			client:    &http.Client{Timeout: 30 * time.Second},
		}
		for i := range settings.nodes {
			c.brokers = append(c.brokers, fmt.Sprintf("%s:%d", advertise, kafkaPort+i))
		}
	}
	if err != nil {
		return c, fmt.Errorf("run sharebroker: %w", err)
	}
	if settings.tls {
		pem, err := c.get(ctx, "/v1/tls/ca.pem")
		if err != nil {
			return c, fmt.Errorf("read the broker's CA: %w", err)
		}
		c.caPEM = pem
	}
	return c, nil
}

// Brokers returns each node's advertised HOST:PORT, node 0 first: the seed
// brokers for a client (the same as the Kafka module's Brokers).
func (c *Container) Brokers(context.Context) ([]string, error) {
	return append([]string(nil), c.brokers...), nil
}

// BootstrapServer returns node 0's HOST:PORT, for bootstrap.servers.
func (c *Container) BootstrapServer(context.Context) (string, error) {
	return c.brokers[0], nil
}

// HTTPAddress returns the HTTP listener's HOST:PORT: /metrics, /readyz,
// /v1/... and the console at /. Every path but /healthz, /readyz and the
// console's pages wants HTTPToken as a bearer token.
func (c *Container) HTTPAddress(context.Context) (string, error) {
	return c.httpAddr, nil
}

// HTTPToken returns the bearer token of the HTTP listener
// ("Authorization: Bearer " + token).
func (c *Container) HTTPToken() string { return c.token }

// CACertificate returns the PEM CA that signed the broker's certificate
// with WithTLS, or nil without it.
func (c *Container) CACertificate() []byte { return append([]byte(nil), c.caPEM...) }

// TLSConfig returns a client TLS configuration trusting CACertificate, or
// nil without WithTLS.
func (c *Container) TLSConfig() *tls.Config {
	if c.caPEM == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	host, _, _ := net.SplitHostPort(c.brokers[0])
	return &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
}

// readyStrategy waits until the broker's /readyz answers 200 or the
// container stops running. It asks the address the broker advertises
// rather than the one testcontainers-go would guess for the daemon.
type readyStrategy struct {
	url     string
	timeout time.Duration
}

func (s readyStrategy) Timeout() *time.Duration { return &s.timeout }

func (s readyStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		state, err := target.State(ctx)
		if err != nil {
			return fmt.Errorf("container state: %w", err)
		}
		if !state.Running {
			return fmt.Errorf("container is %s (exit code %d) before it was ready", state.Status, state.ExitCode)
		}
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil); err == nil {
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", s.url, ctx.Err())
		case <-tick.C:
		}
	}
}

// freePorts returns n consecutive ports (the Kafka port of each node) and
// one more (HTTP), each free on host at the moment it is asked. Another
// process can take one before the container binds it; Run then fails with
// Docker's "address already in use" rather than connecting elsewhere.
func freePorts(host string, n int) ([]int, error) {
	for range 20 {
		var held []net.Listener
		closeAll := func() {
			for _, l := range held {
				l.Close()
			}
		}
		first, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, first)
		base := first.Addr().(*net.TCPAddr).Port
		ok := true
		for i := 1; i < n && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		if !ok {
			closeAll()
			continue
		}
		httpL, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, httpL)
		ports := make([]int, 0, n+1)
		for _, l := range held {
			ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		}
		closeAll()
		return ports, nil
	}
	return nil, errors.New("find free ports: no run of consecutive free ports in 20 tries")
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
