package broker

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// The data directory in the broker's life (docs/durability.md): resolved
// with the configuration, opened and recovered by Start before the Kafka
// listeners bind, closed last by Close. Without one none of this runs and
// the broker is the in-memory one (memory-default).

// propLogDirs is Kafka's name for the data directory.
const propLogDirs = "log.dirs"

// producerIDBlock is how many producer IDs one metadata-log record
// reserves, as Kafka's ProducerIdsRecord hands them out in blocks of 1000
// (producer-ids-reserved).
const producerIDBlock = 1000

// durableState is the broker's data directory, nil without one.
type durableState struct {
	dir *durable.Dir // set by Start before anything is served
	// beforeRecover, nil outside tests, runs in Start after the HTTP
	// server is up and before recovery begins.
	beforeRecover func()

	mu sync.Mutex // guards reservedTo
	// reservedTo is the end of the producer IDs reserved in the metadata
	// log; an ID at or above it needs a new block first.
	reservedTo int64
}

// resolveDataDir reconciles Config.DataDir with log.dirs (one-data-dir,
// data-dir-one-node) and reports the result as log.dirs.
func (r *resolved) resolveDataDir() error {
	prop := r.props[propLogDirs]
	dirs := splitList(prop)
	switch {
	case len(dirs) > 1:
		return fmt.Errorf("%s %q names %d directories: sharebroker keeps one data directory", propLogDirs, prop, len(dirs))
	case len(dirs) == 1 && r.DataDir != "" && filepath.Clean(dirs[0]) != filepath.Clean(r.DataDir):
		return fmt.Errorf("data directory set twice: %s, and %s %s", r.DataDir, propLogDirs, dirs[0])
	case len(dirs) == 1:
		r.DataDir = dirs[0]
	}
	r.props[propLogDirs] = r.DataDir
	if r.DataDir != "" && r.Nodes > 1 {
		return fmt.Errorf("data directory %s with %d nodes: a data directory needs a single node for now", r.DataDir, r.Nodes)
	}
	return nil
}

// recoverData opens and locks the data directory and reads it back into
// the store (ready-after-recovery). On error the directory is released.
func (b *Broker) recoverData() error {
	if b.durable.beforeRecover != nil {
		b.durable.beforeRecover()
	}
	start := time.Now()
	never := func(name string) bool { return b.cfg.props.int64(name) == int64Max }
	d, err := durable.Open(b.cfg.DataDir, durable.Options{
		Policy:       b.filePolicy,
		SyncMeta:     !never("log.flush.interval.messages") || !never("log.flush.interval.ms"),
		Now:          b.clock.Now,
		CompactEvery: max(1, int(b.cfg.props.int32("share.coordinator.snapshot.update.records.per.snapshot"))),
		OnCompacted: func(before, after int) {
			b.log.Debug("metadata log compacted", "bytes_before", before, "bytes_after", after)
		},
		OnCompactError: func(err error) {
			b.log.Warn("metadata log not compacted; the old one stays in use", "err", err)
		},
	})
	if err != nil {
		return err
	}
	rep, err := d.Recover(b.store)
	if err != nil {
		d.Close()
		return err
	}
	for _, cut := range rep.Truncated {
		b.log.Warn("torn tail cut off", attrFile, cut.File, attrBytesDropped, cut.Dropped)
	}
	for _, dir := range rep.Removed {
		b.log.Info("files of an unknown topic removed", attrFile, dir)
	}
	b.durable.dir = d
	if err := b.restoreGroups(d); err != nil {
		d.Close()
		b.durable.dir = nil
		return err
	}
	if err := b.restoreShares(d); err != nil {
		d.Close()
		b.durable.dir = nil
		return err
	}
	b.restoreSCRAM(d)
	b.restoreACLs(d)
	// Producer IDs first: a restored transaction may need a new one.
	b.durable.reservedTo = max(d.ReservedProducerIDs(), b.maxProducerIDSeen()+1)
	b.producerIDs.Store(b.durable.reservedTo)
	openTxns, err := b.restoreTxns(d)
	if err != nil {
		d.Close()
		b.durable.dir = nil
		return err
	}
	b.abortOpenTxns(openTxns)
	b.log.Info("data directory recovered", attrDataDir, b.cfg.DataDir,
		"topics", rep.Topics, "partitions", rep.Partitions, "batches", rep.Batches, "bytes", rep.Bytes,
		"took", time.Since(start))
	return nil
}

// Group kinds as the metadata log names them.
const (
	kindClassic  = "classic"
	kindConsumer = "consumer"
)

// restoreGroups gives the group coordinators and the GROUP config store
// what the data directory kept, and from then on tells it every change
// (docs/durability.md: group-offsets-kept, group-configs-kept).
func (b *Broker) restoreGroups(d *durable.Dir) error {
	b.groupConfigs.SetJournal(func(id string, overrides map[string]string) {
		if err := d.SetGroupConfig(id, overrides); err != nil {
			b.log.Warn("group config not recorded", attrGroup, id, "err", err)
		}
	})
	journal := func(id string, kind group.Type, offsets []group.StoredOffset) {
		g := durable.GroupOffsets{Group: id, Kind: groupKind(kind), Offsets: toDurableOffsets(offsets)}
		if err := d.SetGroupOffsets(g); err != nil {
			b.log.Warn("committed offsets not recorded", attrGroup, id, "err", err)
		}
	}
	b.classicGroups.SetJournal(journal)
	b.consumerGroups.SetJournal(journal)
	pending := func(id string, kind group.Type, producerID int64, offsets []group.StoredOffset) {
		p := durable.PendingOffsets{Group: id, Kind: groupKind(kind), ProducerID: producerID, Offsets: toDurableOffsets(offsets)}
		if err := d.SetPendingOffsets(p); err != nil {
			b.log.Warn("pending transactional offsets not recorded", attrGroup, id, "err", err)
		}
	}
	b.classicGroups.SetPendingJournal(pending)
	b.consumerGroups.SetPendingJournal(pending)
	for id, overrides := range d.GroupConfigs() {
		b.groupConfigs.Restore(id, overrides)
	}
	for id, g := range d.GroupOffsets() {
		offsets := fromDurableOffsets(g.Offsets)
		var err error
		switch g.Kind {
		case kindClassic:
			err = b.classicGroups.Restore(id, offsets)
		case kindConsumer:
			err = b.consumerGroups.Restore(id, offsets)
		default:
			err = fmt.Errorf("unknown group kind %q", g.Kind)
		}
		if err != nil {
			return fmt.Errorf("data directory %s: group %s: %w", b.cfg.DataDir, id, err)
		}
	}
	// Pending transactional commits, after the groups: settled when the
	// restored coordinator ends their transactions (txn-state-kept).
	for _, p := range d.PendingOffsets() {
		var err error
		switch p.Kind {
		case kindClassic:
			err = b.classicGroups.RestorePending(p.Group, p.ProducerID, fromDurableOffsets(p.Offsets))
		case kindConsumer:
			err = b.consumerGroups.RestorePending(p.Group, p.ProducerID, fromDurableOffsets(p.Offsets))
		default:
			err = fmt.Errorf("unknown group kind %q", p.Kind)
		}
		if err != nil {
			return fmt.Errorf("data directory %s: pending offsets of group %s: %w", b.cfg.DataDir, p.Group, err)
		}
	}
	return nil
}

func groupKind(kind group.Type) string {
	if kind == group.TypeConsumer {
		return kindConsumer
	}
	return kindClassic
}

func toDurableOffsets(offsets []group.StoredOffset) []durable.GroupOffset {
	out := make([]durable.GroupOffset, len(offsets))
	for i, o := range offsets {
		out[i] = durable.GroupOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTimeMs: o.CommitTime.UnixMilli(), ExpireAtMs: unixMilliOrZero(o.ExpireAt)}
	}
	return out
}

func fromDurableOffsets(offsets []durable.GroupOffset) []group.StoredOffset {
	out := make([]group.StoredOffset, len(offsets))
	for i, o := range offsets {
		out[i] = group.StoredOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTime: time.UnixMilli(o.CommitTimeMs)}
		if o.ExpireAtMs != 0 {
			out[i].ExpireAt = time.UnixMilli(o.ExpireAtMs)
		}
	}
	return out
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// maxProducerIDSeen returns the highest producer ID any partition knows,
// or -1.
func (b *Broker) maxProducerIDSeen() int64 {
	maxSeen := int64(-1)
	for _, t := range b.store.Topics() {
		for _, p := range t.Partitions() {
			maxSeen = max(maxSeen, p.MaxProducerID())
		}
	}
	return maxSeen
}

// abortOpenTxns ends with an ABORT marker every transaction left open in a
// restored log whose producer ID the coordinator does not hold open (keep;
// abort-open-at-recovery).
func (b *Broker) abortOpenTxns(keep map[int64]bool) {
	nowMs := b.clock.Now().UnixMilli()
	for _, t := range b.store.Topics() {
		for _, p := range t.Partitions() {
			for pid, epoch := range p.OpenTransactions() {
				if keep[pid] {
					continue
				}
				off := p.AppendMarker(storage.MarkerOptions{ProducerID: pid, ProducerEpoch: epoch, NowMs: nowMs})
				b.log.Info("transaction open at recovery aborted", attrTopic, t.Name, attrPartition, p.Index,
					"producer_id", pid, "marker_offset", off)
			}
		}
	}
}

// filePolicy resolves a topic's segment and flush settings from its
// overrides, else their broker synonyms.
func (b *Broker) filePolicy(configs map[string]string) durable.Policy {
	get := func(name string) int64 {
		v, ok := configs[name]
		if !ok {
			p, _ := lookupProperty(name, scopeTopic)
			v = b.cfg.props[p.synonym]
		}
		n, _ := strconv.ParseInt(v, 10, 64) // validated when set
		return n
	}
	return durable.Policy{SegmentBytes: get("segment.bytes"), FlushMessages: get("flush.messages"), FlushMs: get("flush.ms")}
}

// newProducerID hands out an idempotent or transactional producer ID. With
// a data directory, IDs come from blocks reserved in the metadata log first
// (producer-ids-reserved).
func (b *Broker) newProducerID() int64 {
	if b.durable.dir == nil {
		return b.producerIDs.Add(1) - 1
	}
	b.durable.mu.Lock()
	defer b.durable.mu.Unlock()
	id := b.producerIDs.Add(1) - 1
	if id >= b.durable.reservedTo {
		next := id + producerIDBlock
		if err := b.durable.dir.ReserveProducerIDs(next); err != nil {
			// Handing the ID out anyway risks reuse after a restart; a
			// data directory that cannot be written fails produces too.
			b.log.Warn("producer IDs not reserved", attrDataDir, b.cfg.DataDir, "err", err)
			return id
		}
		b.durable.reservedTo = next
	}
	return id
}

// closeData releases the data directory, last in Close.
func (b *Broker) closeData() {
	if b.durable.dir == nil {
		return
	}
	if err := b.durable.dir.Close(); err != nil {
		b.log.Warn("closing the data directory", attrDataDir, b.cfg.DataDir, "err", err)
	}
}
