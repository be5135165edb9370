package broker

import (
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// sharePartitionKey names one share partition: a group's view of one topic
// partition.
type sharePartitionKey struct {
	group string
	topicPartition
}

// sharePart is one share partition with the log it reads and the waiters
// of ShareFetches parked on it.
type sharePart struct {
	sp      *sharepartition.SharePartition
	log     *storage.Partition
	waiters notifier
}

// shareParts is the broker's registry of share partitions. State is made
// lazily, on a group's first fetch of a partition or an
// AlterShareGroupOffsets naming it (share-groups.md §9.5), never by an
// acknowledgement, and never reports "uninitialised".
type shareParts struct {
	timers   *locktimer.Service
	counters *sharepartition.Counters

	mu    sync.Mutex // guards byKey
	byKey map[sharePartitionKey]*sharePart
}

// newShareParts returns an empty registry; onFire (may be nil) learns how
// late each lock timer fired.
func newShareParts(clock locktimer.Clock, onFire func(late time.Duration)) *shareParts {
	return &shareParts{
		timers:   locktimer.NewService(clock, onFire),
		counters: &sharepartition.Counters{},
		byKey:    make(map[sharePartitionKey]*sharePart),
	}
}

// lookup returns the share partition of key if it exists.
func (s *shareParts) lookup(key sharePartitionKey) *sharePart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// sharePart returns the share partition of (groupID, topic, partition),
// creating and initialising it on first use. The start offset comes from
// the group's share.auto.offset.reset: the log start (earliest), the high
// watermark (latest), or the first record stamped at or after now minus
// the duration, else the high watermark (by_duration, §9.4).
func (b *Broker) sharePart(groupID string, t *storage.Topic, log *storage.Partition) *sharePart {
	key := sharePartitionKey{group: groupID, topicPartition: topicPartition{topicID: t.ID, partition: log.Index}}
	s := b.shareParts
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byKey[key]; p != nil && p.log == log {
		return p
	}
	// A new partition, or a topic deleted and recreated with the same ID
	// (impossible with random IDs, but then the old state is stale).
	cfg := b.groupConfigs.Share(groupID)
	p := &sharePart{log: log}
	p.sp = sharepartition.New(b.sharePartitionConfig(cfg, p), s.timers)
	offs := log.Offsets()
	start := offs.HighWatermark
	switch cfg.AutoOffsetReset.Kind {
	case group.ResetEarliest:
		start = offs.LogStart
	case group.ResetByDuration:
		since := b.clock.Now().Add(-cfg.AutoOffsetReset.Duration).UnixMilli()
		if off, _, found := log.OffsetForTimestamp(since); found {
			start = off
		}
	}
	p.sp.InitializeIfNeeded(start)
	s.byKey[key] = p
	return p
}

// sharePartitionConfig turns a group's effective config into the share
// partition's settings. Expiries and releases wake the fetches parked on p.
func (b *Broker) sharePartitionConfig(cfg group.ShareGroupConfig, p *sharePart) sharepartition.Config {
	return sharepartition.Config{
		LockDuration:       cfg.RecordLockDuration,
		DeliveryCountLimit: int16(cfg.DeliveryCountLimit),
		MaxRecordLocks:     int64(cfg.PartitionMaxRecordLocks),
		RenewEnabled:       cfg.RenewAcknowledgeEnable,
		ReadCommitted:      cfg.IsolationLevel == group.ReadCommitted,
		OnChange:           p.waiters.notify,
		Counters:           b.shareParts.counters,
	}
}

// groupConfigChanged applies a group's new effective config to each of its
// share partitions; each setting takes effect where the share partition
// next reads it (a new lock duration on the next acquisition or renewal).
func (b *Broker) groupConfigChanged(groupID string) {
	cfg := b.groupConfigs.Share(groupID)
	for _, p := range b.shareParts.ofGroup(groupID) {
		if err := p.sp.SetConfig(b.sharePartitionConfig(cfg, p)); err != nil {
			b.log.Error("share partition refused a validated group config", attrGroup, groupID, "err", err)
		}
	}
}

// ofGroup returns the share partitions of groupID.
func (s *shareParts) ofGroup(groupID string) []*sharePart {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sharePart
	for key, p := range s.byKey {
		if key.group == groupID {
			out = append(out, p)
		}
	}
	return out
}

// dropGroup forgets every share partition of a deleted group.
func (s *shareParts) dropGroup(groupID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.byKey {
		if key.group == groupID {
			delete(s.byKey, key)
		}
	}
}

// releaseSession releases what member holds on the partitions of its
// closed share session (row 8: the attempt counts, and the delivery limit
// applies).
func (b *Broker) releaseSession(key shareSessionKey, parts []topicPartition, now time.Time) {
	for _, tp := range parts {
		if p := b.shareParts.lookup(sharePartitionKey{group: key.group, topicPartition: tp}); p != nil {
			p.sp.ReleaseMember(key.member, now)
		}
	}
}

// notifier wakes the channels registered with it, each once: the fetches
// parked on a share partition. The zero value is ready to use.
type notifier struct {
	mu      sync.Mutex
	waiters map[chan<- struct{}]struct{}
}

func (n *notifier) watch(ch chan<- struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil {
		n.waiters = make(map[chan<- struct{}]struct{})
	}
	n.waiters[ch] = struct{}{}
}

func (n *notifier) unwatch(ch chan<- struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiters, ch)
}

// notify wakes every waiter without blocking and forgets them.
func (n *notifier) notify() {
	n.mu.Lock()
	waiters := n.waiters
	n.waiters = nil
	n.mu.Unlock()
	for ch := range waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// connClosed ends the share sessions the connection opened and releases
// their members' records (row 8): a consumer that crashes or disconnects
// gives its records back now, not when their locks expire.
func (b *Broker) connClosed(c *conn) {
	now := b.clock.Now()
	for key, parts := range b.shareSessions.closedConn(c) {
		b.releaseSession(key, parts, now)
	}
}

// keysOfGroup returns the keys of groupID's share partitions.
func (s *shareParts) keysOfGroup(groupID string) map[sharePartitionKey]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make(map[sharePartitionKey]struct{})
	for key := range s.byKey {
		if key.group == groupID {
			keys[key] = struct{}{}
		}
	}
	return keys
}

// dropTopic forgets groupID's share partitions of one topic and returns
// how many there were.
func (s *shareParts) dropTopic(groupID string, topicID storage.TopicID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key := range s.byKey {
		if key.group == groupID && key.topicID == topicID {
			delete(s.byKey, key)
			n++
		}
	}
	return n
}
