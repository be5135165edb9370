package broker

import (
	"fmt"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/persist"
)

// The data directory in the broker's life (docs/durability.md): resolved
// with the configuration, opened and recovered by Start before the Kafka
// listeners bind, closed last by Close. Without one none of this runs and
// the broker is the in-memory one (memory-default). What is kept, and how
// each domain package's state is restored and journaled, is persist's;
// here the broker's configuration and objects are handed to it.

// newPersist binds the broker's state to its data directory; New calls it
// once every coordinator exists.
func (b *Broker) newPersist() *persist.Binding {
	never := func(name string) bool { return b.cfg.props.Int64(name) == configdef.Int64Max }
	return persist.New(persist.Config{
		Dir:           b.cfg.DataDir,
		SyncMeta:      !never("log.flush.interval.messages") || !never("log.flush.interval.ms"),
		CompactEvery:  max(1, int(b.cfg.props.Int32("share.coordinator.snapshot.update.records.per.snapshot"))),
		MaxBatchBytes: int64(b.cfg.props.Int32("socket.request.max.bytes")),
		TopicDefault: func(name string) string {
			p, _ := brokerconfig.Lookup(name, configdef.Topic)
			return b.cfg.props[p.Synonym]
		},
		Clock: b.clock,
		Log:   b.log,
	}, persist.State{
		Store:          b.store,
		GroupConfigs:   b.groupConfigs,
		ClassicGroups:  b.classicGroups,
		ConsumerGroups: b.consumerGroups,
		ShareGroups:    b.shareGroups,
		Shares:         shareBinding{b.shareServing},
		Txns:           b.txns,
		Authz:          b.authz,
		Credentials:    scramBinding{b.authn.Credentials},
		Features:       b.features,
		ClientMetrics:  b.telemetry,
	})
}

// recoverData opens and locks the data directory and reads it back into
// the store (ready-after-recovery). On error the directory is released.
func (b *Broker) recoverData() error {
	if b.cfg.beforeRecover != nil {
		b.cfg.beforeRecover()
	}
	return b.data.Recover()
}

// newProducerID hands out an idempotent or transactional producer ID, from
// blocks the data directory reserved when there is one.
func (b *Broker) newProducerID() int64 { return b.data.NewProducerID() }

// RepairDataDir runs the repair tool on the data directory dir, which no
// broker may be using: each file recovery would refuse is cut at the byte
// it names, what is cut is kept under DIR/lost+found, and the report says
// what went (docs/durability.md repair-data-dir).
func RepairDataDir(dir string) (fmt.Stringer, error) {
	return persist.Repair(dir)
}
