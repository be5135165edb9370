package sharebrokertest

import (
	"fmt"
	"strings"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/seed"
)

// Seed options make state before the broker accepts a connection, as the
// command's --topic, --group-config and --seed do (docs/seeding.md): a
// test need not create topics or set GROUP configs through admin
// requests first. Start fails the test, naming the item, if the broker
// refuses one.

// WithTopic creates topic name with partitions partitions (-1:
// num.partitions) and the given topic configs, each "KEY=VALUE":
//
//	sharebrokertest.WithTopic("jobs", 3, "retention.ms=60000")
func WithTopic(name string, partitions int32, configs ...string) Option {
	return func(s *settings) {
		t := seed.Topic{Name: name, Partitions: partitions, From: fmt.Sprintf("WithTopic(%q)", name)}
		for _, kv := range configs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				s.fail(fmt.Errorf("WithTopic(%q): config %q: want KEY=VALUE", name, kv))
				return
			}
			if t.Configs == nil {
				t.Configs = make(map[string]string)
			}
			t.Configs[k] = v
		}
		s.seed.Topics = append(s.seed.Topics, t)
	}
}

// WithGroupConfig sets a GROUP config of group (share-groups.md §5.6)
// before any member joins. Share groups start at the log end
// (share.auto.offset.reset=latest, Kafka's default), so a test that
// produces before its share consumer starts wants
//
//	sharebrokertest.WithGroupConfig("workers", "share.auto.offset.reset", "earliest")
func WithGroupConfig(group, key, value string) Option {
	return func(s *settings) {
		s.seed.GroupConfigs = append(s.seed.GroupConfigs, seed.GroupConfig{Group: group, Configs: map[string]string{key: value},
			From: fmt.Sprintf("WithGroupConfig(%q, %q)", group, key)})
	}
}

// WithSeedFile applies a seed file, as --seed FILE does (docs/seeding.md,
// "The seed file").
func WithSeedFile(path string) Option {
	return func(s *settings) {
		f, err := seed.ReadFile(path)
		if err != nil {
			s.fail(err)
			return
		}
		s.seed.Add(f)
	}
}

// WithSeed applies a seed built in Go: topics, GROUP configs, SCRAM users
// and ACLs (ACLs need WithProperty("authorizer.class.name", ...)).
func WithSeed(sd broker.Seed) Option { return func(s *settings) { s.seed.Add(sd) } }

func (s *settings) fail(err error) {
	if s.seedErr == nil {
		s.seedErr = err
	}
}
