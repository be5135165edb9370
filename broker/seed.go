package broker

import "github.com/sharebroker/sharebroker/seed"

// The state given at start (package seed, docs/seeding.md): Start applies
// it after recovering the data directory and before binding the Kafka
// listeners (seed-before-listen), so a client that can connect finds
// every seeded topic, config, user and ACL, and a port that accepts means
// the seed is in place.

// Seed is the state made at start (Config.Seed).
type Seed = seed.Seed

// SeedFlags are the seed's flags as the command line gives them.
type SeedFlags = seed.Flags

// SeedFromFlags reads the seed file and the seed flags' items; an error
// names the flag and the item.
func SeedFromFlags(f SeedFlags) (Seed, error) { return seed.FromFlags(f) }

// applySeed makes the seed exist, each item through the package that
// owns it.
func (b *Broker) applySeed() error {
	if b.cfg.beforeSeed != nil {
		b.cfg.beforeSeed()
	}
	return seed.Apply(b.cfg.Seed, seed.Target{
		Store:              b.store,
		NumPartitions:      b.cfg.props.Int32("num.partitions"),
		GroupConfigs:       b.groupConfigs,
		GroupConfigChanged: b.shareServing.GroupConfigChanged,
		Credentials:        b.authn.Credentials,
		Authorizer:         b.authz,
		Log:                b.log,
	})
}
