// Package persist binds the broker's domain state to its data directory
// (docs/durability.md): at start it recovers the directory and restores
// every coordinator, registry and store from it, in one order, before
// anything is served (ready-after-recovery); from then on it writes each
// change they report. It owns the translation between the domain
// packages' types and durable's records, the producer-ID blocks and the
// file policy of a topic. The files themselves are durable's; it sees no
// Kafka request and no socket.
package persist

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/features"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// Log attribute keys, the broker's own (broker/logattrs.go), so a log
// line about the data directory names things as every other line does.
const (
	attrDataDir      = "data_dir"
	attrFile         = "file"
	attrBytesDropped = "bytes_dropped"
	attrGroup        = "group"
	attrTopic        = "topic"
	attrPartition    = "partition"
)

// Config is how the broker's configuration sets up the binding.
type Config struct {
	// Dir is the data directory; empty means none: Recover and Close do
	// nothing, and producer IDs are only counted (memory-default).
	Dir string
	// SyncMeta fsyncs each metadata-log record (durable.Options).
	SyncMeta bool
	// CompactEvery is durable.Options.CompactEvery.
	CompactEvery int
	// MaxBatchBytes is durable.Options.MaxBatchBytes: the broker's
	// socket.request.max.bytes, the largest batch a write can carry.
	MaxBatchBytes int64
	// TopicDefault returns the value a topic config takes when the topic
	// does not override it: its broker synonym's. The broker's property
	// table knows the synonyms.
	TopicDefault func(name string) string
	Clock        locktimer.Clock
	Log          *slog.Logger
}

// State is the broker's domain state the data directory keeps. Every
// field is required but Authz, nil when no authorizer runs, and
// ClientMetrics.
type State struct {
	Store          *storage.Store
	GroupConfigs   *group.ConfigStore
	ClassicGroups  *group.ClassicGroups
	ConsumerGroups *group.ConsumerGroups
	ShareGroups    *group.ShareGroups
	Shares         Shares
	Txns           *txn.Coordinator
	Authz          *acl.Authorizer
	Credentials    Credentials
	// Features are the cluster's finalized feature levels; nil keeps none.
	Features *features.Set
	// ClientMetrics, nil when not kept, are the client telemetry
	// subscriptions (client_metrics.go).
	ClientMetrics ClientMetrics
}

// Binding is the broker's data directory, and the producer IDs it hands
// out with or without one. NewProducerID is safe for concurrent use;
// Recover runs once, before anything is served, and Close once, last.
type Binding struct {
	cfg Config
	st  State

	// dir is set by Recover before anything is served; nil without a
	// data directory.
	dir *durable.Dir

	// nextProducerID is the next producer ID to hand out.
	nextProducerID atomic.Int64
	mu             sync.Mutex // guards reservedTo
	// reservedTo is the end of the producer IDs reserved in the metadata
	// log; an ID at or above it needs a new block first.
	reservedTo int64
}

// New returns the binding of st to the data directory cfg names. Nothing
// is opened before Recover.
func New(cfg Config, st State) *Binding {
	return &Binding{cfg: cfg, st: st}
}

// Recover opens and locks the data directory and reads it back into the
// state (ready-after-recovery), then has every later change written
// there. The order matters: groups before share partitions (which make
// their groups exist), producer IDs before transactions (a restored
// transaction may need a new one), the coordinator's transactions before
// the logs' open ones are aborted. On error the directory is released.
func (b *Binding) Recover() error {
	if b.cfg.Dir == "" {
		return nil
	}
	start := time.Now()
	d, err := durable.Open(b.cfg.Dir, durable.Options{
		Policy:        b.filePolicy,
		SyncMeta:      b.cfg.SyncMeta,
		Now:           b.cfg.Clock.Now,
		CompactEvery:  b.cfg.CompactEvery,
		MaxBatchBytes: b.cfg.MaxBatchBytes,
		OnCompacted: func(before, after int) {
			b.cfg.Log.Debug("metadata log compacted", "bytes_before", before, "bytes_after", after)
		},
		OnCompactError: func(err error) {
			b.cfg.Log.Warn("metadata log not compacted; the old one stays in use", "err", err)
		},
	})
	if err != nil {
		return err
	}
	rep, err := d.Recover(b.st.Store)
	if err != nil {
		d.Close()
		return err
	}
	for _, cut := range rep.Truncated {
		b.cfg.Log.Warn("torn tail cut off", attrFile, cut.File, "at_byte", cut.At, attrBytesDropped, cut.Dropped)
	}
	for _, m := range rep.SetAside {
		b.cfg.Log.Warn("files of a topic the metadata log does not know set aside, not deleted", attrFile, m.From, "moved_to", m.To)
	}
	for _, r := range rep.Removed {
		b.cfg.Log.Info("file removed", attrFile, r.Name, "why", r.Why)
	}
	b.dir = d
	if err := b.restore(d); err != nil {
		d.Close()
		b.dir = nil
		return err
	}
	b.cfg.Log.Info("data directory recovered", attrDataDir, b.cfg.Dir,
		"topics", rep.Topics, "partitions", rep.Partitions, "batches", rep.Batches, "bytes", rep.Bytes,
		"took", time.Since(start))
	return nil
}

// restore gives the state what d kept, in Recover's order.
func (b *Binding) restore(d *durable.Dir) error {
	if err := b.restoreFeatures(d); err != nil {
		return err
	}
	if err := b.restoreGroups(d); err != nil {
		return err
	}
	if err := b.restoreShares(d); err != nil {
		return err
	}
	b.restoreSCRAM(d)
	b.restoreACLs(d)
	b.restoreClientMetrics(d)
	// Producer IDs first: a restored transaction may need a new one.
	b.reservedTo = max(d.ReservedProducerIDs(), b.maxProducerIDSeen()+1)
	b.nextProducerID.Store(b.reservedTo)
	openTxns, err := b.restoreTxns(d)
	if err != nil {
		return err
	}
	b.abortOpenTxns(openTxns)
	return nil
}

// filePolicy resolves a topic's segment and flush settings from its
// overrides, else their broker synonyms.
func (b *Binding) filePolicy(configs map[string]string) durable.Policy {
	get := func(name string) int64 {
		v, ok := configs[name]
		if !ok {
			v = b.cfg.TopicDefault(name)
		}
		n, _ := strconv.ParseInt(v, 10, 64) // validated when set
		return n
	}
	return durable.Policy{SegmentBytes: get("segment.bytes"), FlushMessages: get("flush.messages"), FlushMs: get("flush.ms")}
}

// Close releases the data directory, last when the broker closes.
func (b *Binding) Close() {
	if b.dir == nil {
		return
	}
	if err := b.dir.Close(); err != nil {
		b.cfg.Log.Warn("closing the data directory", attrDataDir, b.cfg.Dir, "err", err)
	}
}

// errorf names the data directory in a recovery error.
func (b *Binding) errorf(format string, args ...any) error {
	return fmt.Errorf("data directory %s: "+format, append([]any{b.cfg.Dir}, args...)...)
}

// Repair runs the repair tool on the data directory dir
// (docs/durability.md repair-data-dir): it cuts each file recovery
// refuses at the byte it names, keeping what it cuts, and reports it. No
// broker may be running on dir (it is locked, as at start).
func Repair(dir string) (durable.RepairReport, error) {
	return durable.Repair(dir, durable.Options{})
}
