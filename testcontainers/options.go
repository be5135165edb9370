package sharebroker

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/testcontainers/testcontainers-go"
)

// options are what Run's own options set; everything else a caller passes
// (testcontainers.WithEnv, WithNetwork, ...) goes to testcontainers-go
// unchanged.
type options struct {
	tls           bool
	saslUsers     []string // NAME:PASSWORD
	nodes         int
	hostNetwork   bool
	advertiseHost string
	testAPI       bool
	args          []string
	env           map[string]string
	seedFiles     []string // host paths, copied to seedDir
}

// seedDir is where WithSeedFile's files are copied in the container.
const seedDir = "/seed"

func defaultOptions() options {
	return options{nodes: 1, testAPI: true, env: map[string]string{}}
}

// Option is one of this module's options. Like the options of
// testcontainers-go's own modules it is a testcontainers.ContainerCustomizer
// whose Customize does nothing: Run reads it before it builds the request.
type Option func(*options) error

// Customize does nothing; Run applies an Option itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// WithTLS makes the Kafka listener speak TLS (SSL, or SASL_SSL with
// WithSASLUser) with a certificate the broker generates at start for
// localhost, 127.0.0.1 and the advertised host. Container.CACertificate and
// Container.TLSConfig give its CA.
func WithTLS() Option {
	return func(o *options) error {
		o.tls = true
		return nil
	}
}

// WithSASLUser adds a user for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 and
// makes the Kafka listener SASL_PLAINTEXT (SASL_SSL with WithTLS).
// Repeatable.
func WithSASLUser(name, password string) Option {
	return func(o *options) error {
		if name == "" || strings.ContainsAny(name, ":,") || strings.Contains(password, ",") {
			return fmt.Errorf("sasl user %q: a name is non-empty without ':' or ',', a password has no ','", name)
		}
		o.saslUsers = append(o.saslUsers, name+":"+password)
		return nil
	}
}

// WithNodes runs n nodes in the one container (--nodes, docs/cluster.md):
// node i listens and advertises on the bootstrap port + i, and the test
// API can move partition leaders between them (Container.MoveLeader).
func WithNodes(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 16 {
			return fmt.Errorf("nodes %d: want 1 to 16", n)
		}
		o.nodes = n
		return nil
	}
}

// WithHostNetwork runs the container on the host's network (--network host)
// instead of publishing its ports; the listeners then bind 127.0.0.1 only.
// It is what a Docker daemon without a bridge network needs (a daemon
// started with --bridge=none, as sharebroker's CI does). Linux only.
func WithHostNetwork() Option {
	return func(o *options) error {
		o.hostNetwork = true
		return nil
	}
}

// WithAdvertisedHost sets the host name or address the broker tells
// clients to connect to (default 127.0.0.1): for a Docker daemon on
// another machine, its address. The ports are then published on all of
// that machine's interfaces, and Run still picks them free on this one, so
// a port taken there fails the start. The TLS certificate names the host
// too.
func WithAdvertisedHost(host string) Option {
	return func(o *options) error {
		if host == "" || strings.ContainsAny(host, ":/, ") {
			return fmt.Errorf("advertised host %q: want a host name or IPv4 address", host)
		}
		o.advertiseHost = host
		return nil
	}
}

// WithoutTestAPI turns off the test control API (--enable-test-api), on by
// default here; AdvanceClock, Now and MoveLeader then fail. The broker's
// clock is then the real clock.
func WithoutTestAPI() Option {
	return func(o *options) error {
		o.testAPI = false
		return nil
	}
}

// WithConfig sets Kafka properties, as `--config KEY=VALUE` does (the
// README's configuration reference lists them), e.g.
// WithConfig(map[string]string{"num.partitions": "3"}).
func WithConfig(props map[string]string) Option {
	return func(o *options) error {
		for k, v := range props {
			if k == "" || strings.Contains(k, "=") {
				return fmt.Errorf("config property %q: want a Kafka property name", k)
			}
			o.args = append(o.args, "--config", k+"="+v)
		}
		return nil
	}
}

// WithArgs appends arguments to the container's `sharebroker serve`
// command: any flag `sharebroker serve --help` lists. A flag given here wins
// over the SHAREBROKER_* variable Run sets for the same setting, so it can
// break what Run arranged (the listeners, the HTTP address); seeding flags
// (topics, group configs) are what it is for.
func WithArgs(args ...string) Option {
	return func(o *options) error {
		for _, a := range args {
			if a == "serve" {
				return errors.New(`WithArgs: "serve" is already the command`)
			}
		}
		o.args = append(o.args, args...)
		return nil
	}
}

// WithEnv sets environment variables of the container: SHAREBROKER_*
// variables, or the apache/kafka image's KAFKA_* ones where the image reads
// them. Run's own settings (listeners, HTTP address, token) are set after
// these and win.
func WithEnv(env map[string]string) Option {
	return func(o *options) error {
		for k, v := range env {
			if k == "" || strings.Contains(k, "=") {
				return fmt.Errorf("environment variable name %q", k)
			}
			o.env[k] = v
		}
		return nil
	}
}

// WithTopic makes a topic before the broker's listeners accept (the
// `--topic NAME:PARTITIONS[:KEY=VALUE,...]` flag, docs/seeding.md):
// partitions -1 means num.partitions, and configs are topic configs. Run
// returns only once it exists. Making one that exists with the same
// settings is nothing; other settings fail the start.
func WithTopic(name string, partitions int, configs map[string]string) Option {
	return func(o *options) error {
		if name == "" || strings.ContainsAny(name, ":;\n") {
			return fmt.Errorf("WithTopic: %q is not a topic name", name)
		}
		if partitions == 0 || partitions < -1 {
			return fmt.Errorf("WithTopic %s: %d partitions; want at least 1, or -1 for num.partitions", name, partitions)
		}
		item := name + ":" + strconv.Itoa(partitions)
		if kv := seedPairs(configs); kv != "" {
			item += ":" + kv
		}
		o.args = append(o.args, "--topic", item)
		return nil
	}
}

// WithGroupConfig sets GROUP configs before the listeners accept (the
// `--group-config GROUP:KEY=VALUE,...` flag), e.g.
// WithGroupConfig("workers", map[string]string{"share.auto.offset.reset":
// "earliest"}): share groups start at the log end unless told otherwise,
// as in Kafka, so a test that produces before its consumer starts wants
// this.
func WithGroupConfig(group string, configs map[string]string) Option {
	return func(o *options) error {
		if group == "" || len(configs) == 0 {
			return fmt.Errorf("WithGroupConfig %q: want a group and at least one config", group)
		}
		o.args = append(o.args, "--group-config", group+":"+seedPairs(configs))
		return nil
	}
}

// WithSeedFile copies a seed file (JSON, docs/seeding.md: topics, group
// configs, SCRAM users, ACLs) from the host into the container and passes
// it as `--seed`. Repeatable; the files must have different base names.
func WithSeedFile(hostPath string) Option {
	return func(o *options) error {
		base := filepath.Base(hostPath)
		for _, f := range o.seedFiles {
			if filepath.Base(f) == base {
				return fmt.Errorf("WithSeedFile: two seed files named %s", base)
			}
		}
		o.seedFiles = append(o.seedFiles, hostPath)
		o.args = append(o.args, "--seed", path.Join(seedDir, base))
		return nil
	}
}

// seedPairs writes configs as the seed flags' KEY=VALUE,... in key order,
// so the command line is the same on every run.
func seedPairs(configs map[string]string) string {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + configs[k]
	}
	return strings.Join(pairs, ",")
}
