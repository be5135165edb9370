package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebroker/sharebroker/broker"
)

// shutdownGrace bounds how long a stopping broker waits for requests in
// flight before it closes their connections.
const shutdownGrace = 10 * time.Second

// serveFlags are the flags of `sharebroker serve` (and of the bare command).
type serveFlags struct {
	listen    string
	advertise string
	// Kafka's listener properties, as flags; each wins over the --config
	// of the same property.
	listeners           string
	advertisedListeners string
	protocolMap         string
	http                string
	testAPI             bool
	nodeID              int32
	nodes               int
	clusterID           string
	// kafkaVersion is the Kafka release to be (--kafka-version, the
	// property sharebroker.kafka.version); it wins over that --config.
	kafkaVersion string
	logLevel     string
	logFormat    string
	configs      []string
	// TLS of the SSL listeners (broker.TLSConfig); tlsCAOut is where the
	// generated CA is written.
	tlsCert, tlsKey, tlsClientCA, tlsCAOut string
	// saslUsers are NAME:PASSWORD pairs (broker.Config.SASLUsers).
	saslUsers []string
	// dataDir is broker.Config.DataDir (Kafka's log.dirs).
	dataDir string
	// httpGuard is the HTTP listener's token and bounds (httpguard.go).
	httpGuard httpGuardFlags
	// kafkaEnv reads the apache/kafka image's environment (kafkaenv.go)
	// and kafkaConfigDir its file input; kafkaNotes are what that logs,
	// jaasFile the JAAS file KAFKA_OPTS names.
	kafkaEnv       bool
	kafkaConfigDir string
	kafkaNotes     []string
	jaasFile       string
	// seed is the state made at start (seed.go).
	seed broker.SeedFlags
}

func newRootCommand() *cobra.Command {
	var f serveFlags
	root := &cobra.Command{
		Use:           "sharebroker",
		Short:         "A Kafka-protocol broker for testing share-group consumers",
		Long:          "sharebroker speaks the Kafka protocol so unmodified Kafka clients can produce, fetch and\nconsume through share groups against it. With no subcommand it serves.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		// SHAREBROKER_* variables fill the flags left unset (env.go).
		PersistentPreRunE: applyOSEnv,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyKafkaEnv(cmd, &f, os.Environ()); err != nil {
				return err
			}
			return runServe(cmd.Context(), cmd.ErrOrStderr(), f)
		},
	}
	addServeFlags(root, &f)

	var sf serveFlags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker (the default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyKafkaEnv(cmd, &sf, os.Environ()); err != nil {
				return err
			}
			return runServe(cmd.Context(), cmd.ErrOrStderr(), sf)
		},
	}
	addServeFlags(serve, &sf)

	version := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "sharebroker", buildVersion())
		},
	}
	root.AddCommand(serve, version, newHealthcheckCommand(), newRepairCommand())
	return root
}

func addServeFlags(cmd *cobra.Command, f *serveFlags) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", broker.DefaultListen, "Kafka listener address, HOST:PORT")
	fs.StringVar(&f.advertise, "advertise", "", "address clients are told to connect to, HOST:PORT (default: the listen address, localhost for an unspecified host)")
	fs.StringVar(&f.listeners, "listeners", "", "named Kafka listeners, NAME://HOST:PORT,... (Kafka's listeners); replaces --listen and --advertise")
	fs.StringVar(&f.advertisedListeners, "advertised-listeners", "", "address each listener advertises, NAME://HOST:PORT,... (Kafka's advertised.listeners)")
	fs.StringVar(&f.protocolMap, "listener-security-protocol-map", "", "NAME:PROTOCOL,... for each listener not named after its protocol (Kafka's listener.security.protocol.map; PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)")
	fs.StringVar(&f.http, "http", broker.DefaultHTTP, "HTTP address for /metrics, /healthz, /readyz and the /v1 inspection API, HOST:PORT; '' turns it off")
	fs.BoolVar(&f.testAPI, "enable-test-api", false, "serve the test-control API under /v1/test/ (clock advance) on the HTTP listener; never in production")
	fs.Int32Var(&f.nodeID, "node-id", 0, "node ID reported in Metadata (the first node's with --nodes)")
	fs.IntVar(&f.nodes, "nodes", 1, "nodes to run in this process, IDs node-id to node-id+N-1; node i listens and advertises on each listener's port + i")
	fs.StringVar(&f.clusterID, "cluster-id", broker.DefaultClusterID, "cluster ID reported to clients")
	fs.StringVar(&f.kafkaVersion, "kafka-version", "", "Kafka release to be, "+broker.KafkaVersionList()+": ApiVersions advertises its API versions and a new cluster gets its feature levels (docs/features.md; default: the newest, "+broker.KafkaVersions[len(broker.KafkaVersions)-1]+")")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) of the SSL and SASL_SSL listeners; with --tls-key (default: one generated at start, signed by a generated CA)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "PEM CA certificates that sign client certificates, for --config ssl.client.auth=required or requested")
	fs.StringVar(&f.tlsCAOut, "tls-ca-out", "", "file to write the generated CA certificate to (PEM), also served at GET /v1/tls/ca.pem")
	fs.StringArrayVar(&f.saslUsers, saslUserFlag, nil, "SASL user NAME:PASSWORD for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; repeatable (env "+envSASLUsers+"=alice:pw,bob:pw)")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory that keeps topics and records across restarts (Kafka's log.dirs; docs/durability.md); empty keeps everything in memory")
	fs.StringArrayVar(&f.configs, "config", nil, "Kafka property KEY=VALUE; repeatable (see the README's configuration reference)")
	addHTTPGuardFlags(fs, &f.httpGuard)
	fs.BoolVar(&f.kafkaEnv, kafkaEnvFlag, false, "read the apache/kafka image's environment: KAFKA_<PROPERTY> variables, CLUSTER_ID, and the file input's server.properties (docs/kafka-env.md); the container image turns it on")
	fs.StringVar(&f.kafkaConfigDir, kafkaConfigDirFlag, defaultKafkaConfigDir, "with --kafka-env, the directory whose server.properties is read under the KAFKA_ variables, as the apache/kafka image's file input; '' reads none")
	addSeedFlags(fs, &f.seed)
}

// buildConfig turns flags into a broker.Config; every mistake names the flag.
func buildConfig(f serveFlags, logOut io.Writer) (broker.Config, error) {
	cfg := broker.Config{
		Listen:        f.listen,
		Advertise:     f.advertise,
		HTTP:          f.http,
		EnableTestAPI: f.testAPI,
		NodeID:        f.nodeID,
		Nodes:         f.nodes,
		ClusterID:     f.clusterID,
		DataDir:       f.dataDir,
		Props:         make(map[string]string),
	}
	if f.nodes < 1 {
		return cfg, fmt.Errorf("--nodes %d: want at least 1", f.nodes)
	}
	switch {
	case f.tlsCert != "" && f.tlsKey == "":
		return cfg, fmt.Errorf("--tls-cert %s given without --tls-key", f.tlsCert)
	case f.tlsKey != "" && f.tlsCert == "":
		return cfg, fmt.Errorf("--tls-key %s given without --tls-cert", f.tlsKey)
	case f.tlsCAOut != "" && f.tlsCert != "":
		return cfg, fmt.Errorf("--tls-ca-out: no CA is generated when --tls-cert is given")
	}
	cfg.TLS = broker.TLSConfig{CertFile: f.tlsCert, KeyFile: f.tlsKey, ClientCAFile: f.tlsClientCA}
	for _, s := range f.saslUsers {
		u, err := broker.ParseSASLUser(s)
		if err != nil {
			// The value holds a password: name the user only.
			name, _, _ := strings.Cut(s, ":")
			return cfg, fmt.Errorf("--%s %q: %v", saslUserFlag, name, err)
		}
		cfg.SASLUsers = append(cfg.SASLUsers, u)
	}
	seed, err := broker.SeedFromFlags(f.seed)
	if err != nil {
		return cfg, err
	}
	cfg.Seed = seed
	if f.testAPI && f.http == "" {
		return cfg, fmt.Errorf("--enable-test-api needs the HTTP server: --http is empty")
	}
	if err := applyHTTPGuard(&cfg, f.httpGuard); err != nil {
		return cfg, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cfg, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch f.logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(logOut, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(logOut, opts))
	default:
		return cfg, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	for _, kv := range f.configs {
		key, value, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return cfg, fmt.Errorf("--config %q: want KEY=VALUE", kv)
		}
		cfg.Props[key] = value
	}
	if f.kafkaVersion != "" {
		if !broker.ValidKafkaVersion(f.kafkaVersion) {
			return cfg, fmt.Errorf("--kafka-version %q: want %s", f.kafkaVersion, broker.KafkaVersionList())
		}
		cfg.Props[broker.KafkaVersionProperty] = f.kafkaVersion
	}
	for prop, v := range map[string]string{
		"listeners":                      f.listeners,
		"advertised.listeners":           f.advertisedListeners,
		"listener.security.protocol.map": f.protocolMap,
	} {
		if v != "" {
			cfg.Props[prop] = v
		}
	}
	// Kafka's keystores and JAAS users (kafkasecurity.go).
	if err := applyKafkaSecurity(&cfg, f.jaasFile); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func runServe(ctx context.Context, logOut io.Writer, f serveFlags) error {
	cfg, err := buildConfig(f, logOut)
	if err != nil {
		return err
	}
	for _, note := range f.kafkaNotes {
		cfg.Logger.Info("kafka environment: " + note)
	}
	// Bound the garbage between GC cycles (memory.go); process-wide, so
	// here and not in package broker. With a data directory it starts
	// once Start has recovered it: recovery allocates the log itself, not
	// garbage, and bounding the heap's growth meanwhile made a restart on
	// 1 GB of records spend a third of its time in GC cycles that freed
	// nothing.
	if cfg.DataDir == "" {
		stopGC, _ := followLiveHeap(nil)
		defer stopGC()
	}
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	// Start-up's work (initialisers, flags, configuration, New) is done;
	// its pages need not stay resident. Released before the listeners
	// accept, so a client never sees a broker that still holds them; what
	// Start and serving use comes back as they run. Failing to release
	// them costs memory, nothing else.
	if _, err := releaseStartupPages(); err != nil {
		cfg.Logger.Debug("start-up pages stay mapped", "err", err)
	}
	if f.tlsCAOut != "" {
		ca := b.CAPEM()
		if ca == nil {
			return fmt.Errorf("--tls-ca-out %s: no CA was generated: no SSL or SASL_SSL listener", f.tlsCAOut)
		}
		if err := os.WriteFile(f.tlsCAOut, ca, 0o644); err != nil {
			return fmt.Errorf("--tls-ca-out: %w", err)
		}
	}
	if err := b.Start(); err != nil {
		// Release what Start began (the HTTP server, the data directory's
		// lock) before the error is reported.
		closeCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = b.Close(closeCtx)
		return err
	}
	if cfg.DataDir != "" {
		stopGC, _ := followLiveHeap(nil)
		defer stopGC()
	}
	<-ctx.Done()
	cfg.Logger.Info("shutting down", "grace", shutdownGrace)
	closeCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := b.Close(closeCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
