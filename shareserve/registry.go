package shareserve

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// Key names one share partition: a group's view of one topic partition.
type Key struct {
	Group string
	TopicPartition
}

// Partition is one share partition with the log it reads and the waiters
// of ShareFetches parked on it. Share and Log are set at creation and never
// change.
type Partition struct {
	Share *sharepartition.SharePartition
	Log   *storage.Partition
	// waiters are the fetches parked on the share partition, woken when
	// records become acquirable (acknowledgement, release, lock expiry).
	waiters storage.Notifier
	// moving is held for writing while a leader move hands the partition
	// over, and for reading by an acquisition that checked its node still
	// leads: no acquisition on the old leader survives the handover.
	moving sync.RWMutex
	// FetchLock times the fetch passes over the partition (fetchlock.go).
	FetchLock FetchLock
	// dropped is set, under the registry's lock, once the registry no
	// longer holds p (its group or topic dropped, or replaced): a session
	// that resolved p before may keep using it only while this is unset.
	dropped atomic.Bool
}

// Keyed is a share partition with its key, as listings return it.
type Keyed struct {
	Key  Key
	Part *Partition
}

// Options configures a Service.
type Options struct {
	Store *storage.Store
	Clock locktimer.Clock
	// MaxSessions is group.share.max.share.sessions.
	MaxSessions int
	// GroupConfig returns a group's effective config. The registry reads it
	// only when it creates a share partition or a group's config changes,
	// under its own lock, so a partition created during an AlterConfigs
	// cannot keep the old settings.
	GroupConfig func(groupID string) group.ShareGroupConfig
	// OnLockFire, when set, learns how late each lock timer fired.
	OnLockFire func(late time.Duration)
	// Edge, when set, answers what only the Kafka edge knows: which node
	// leads a partition and what a requester may read. nil means one node
	// leads everything and every topic may be read.
	Edge Edge
	// DeadLetters, when set, turns dead-letter queues on (share.version 2,
	// KIP-1191): the dead letters of every share partition whose group
	// names a dead-letter topic are written there (dead_letter.go). A group
	// without one carries no hook.
	DeadLetters *DeadLetterOptions
	// StoryEvents is sharebroker.record.story.events: the record-story
	// events each share partition keeps (sharepartition.Config.StoryEvents);
	// 0 keeps none.
	StoryEvents int
	// onDeadLetter, when set, is told of dead letters instead of the
	// writer, with the group's dead-letter config: the package's tests
	// watch which share partitions carry the hook with it.
	onDeadLetter func(Key, group.DeadLetterConfig, []sharepartition.DeadLetter)
}

// Service serves share groups on top of storage and sharepartition: it
// holds the share sessions, the registry of share partitions, and applies
// acknowledgements and acquisitions for the broker's handlers. It is safe
// for concurrent use. State is made lazily, on a group's first fetch of a
// partition or an AlterShareGroupOffsets naming it (share-groups.md §9.5),
// never by an acknowledgement, and never reports "uninitialised"; with a
// data directory, the state kept there is made at start (Restore).
type Service struct {
	store       *storage.Store
	clock       locktimer.Clock
	groupConfig func(groupID string) group.ShareGroupConfig
	timers      *locktimer.Service
	counters    *sharepartition.Counters
	edge        Edge
	// deadLetter receives the dead letters of groups with a dead-letter
	// topic; nil with dead-letter queues off. deadLetters is its writer.
	deadLetter  func(Key, group.DeadLetterConfig, []sharepartition.DeadLetter)
	deadLetters *deadLetterWriter
	storyEvents int

	// Sessions is the share-session cache (share-groups.md §2.4).
	Sessions *Sessions

	// journal keeps share state across restarts; nil without a data
	// directory. Set by SetJournal before anything is served.
	journal Journal

	mu    sync.Mutex // guards byKey
	byKey map[Key]*Partition
}

// Journal is where share-partition state goes to survive a restart
// (docs/durability.md share-state-as-kafka).
type Journal interface {
	// SharePersisted records a change of key's persisted state. It is
	// called in the order of the changes, one at a time, after the share
	// partition's lock is released and before the changing call returns
	// (sharepartition.Config.Persist).
	SharePersisted(key Key, st sharepartition.Persisted)
	// ShareDropped records that key has no state any more.
	ShareDropped(key Key)
}

// SetJournal makes every share partition created from now on write its
// state to j. The broker calls it once, after recovery and before it
// serves.
func (s *Service) SetJournal(j Journal) { s.journal = j }

// Restore creates the share partition of (groupID, t, log) from persisted
// state instead of share.auto.offset.reset, at recovery. A log start that
// moved past the SPSO (retention while the state was written elsewhere)
// moves it as it would have live.
func (s *Service) Restore(groupID string, t *storage.Topic, log *storage.Partition, st sharepartition.Persisted) error {
	key := Key{Group: groupID, TopicPartition: TopicPartition{TopicID: t.ID, Partition: log.Index}}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &Partition{Log: log}
	p.Share = sharepartition.New(s.partitionConfig(key, s.groupConfig(groupID), p), s.timers)
	if err := p.Share.Restore(st); err != nil {
		return err
	}
	p.Share.LogStartMoved(log.Offsets().LogStart, s.clock.Now())
	s.byKey[key] = p
	return nil
}

// New returns a service with no sessions and no share partitions.
func New(o Options) *Service {
	s := &Service{
		store:       o.Store,
		clock:       o.Clock,
		groupConfig: o.GroupConfig,
		timers:      locktimer.NewService(o.Clock, o.OnLockFire),
		counters:    &sharepartition.Counters{},
		edge:        o.Edge,
		deadLetter:  o.onDeadLetter,
		storyEvents: o.StoryEvents,
		Sessions:    newSessions(o.MaxSessions),
		byKey:       make(map[Key]*Partition),
	}
	if o.DeadLetters != nil && s.deadLetter == nil {
		s.deadLetters = &deadLetterWriter{
			o:       *o.DeadLetters,
			store:   o.Store,
			now:     o.Clock.Now,
			written: make(map[DeadLetterSeries]*atomic.Int64),
			told:    s.deadLettered,
		}
		s.deadLetter = s.deadLetters.write
	}
	return s
}

// deadLettered tells key's share partition, for its record stories, that
// the dead letters of first..last went to partition of topic from
// dlqOffset on.
func (s *Service) deadLettered(key Key, first, last int64, topic string, partition int32, dlqOffset int64, now time.Time) {
	if p := s.Lookup(key); p != nil {
		p.Share.DeadLettered(first, last, topic, partition, dlqOffset, now)
	}
}

// Close stops the lock timers: no lock expires after it returns.
func (s *Service) Close() { s.timers.Close() }

// Counters counts records as they move, across every share partition.
func (s *Service) Counters() *sharepartition.Counters { return s.counters }

// LockTimers returns the number of live acquisition-lock timers.
func (s *Service) LockTimers() int { return s.timers.Len() }

// Lookup returns the share partition of key, or nil if it has none.
func (s *Service) Lookup(key Key) *Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// Get returns the share partition of (groupID, t, log), creating and
// initialising it on first use. The start offset comes from the group's
// share.auto.offset.reset: the log start (earliest), the high watermark
// (latest), or the first record stamped at or after now minus the
// duration, else the high watermark (by_duration, share-groups.md §9.4).
func (s *Service) Get(groupID string, t *storage.Topic, log *storage.Partition) *Partition {
	key := Key{Group: groupID, TopicPartition: TopicPartition{TopicID: t.ID, Partition: log.Index}}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.byKey[key]
	if old != nil && old.Log == log {
		return old
	}
	if old != nil {
		old.dropped.Store(true)
	}
	// A new partition, or a topic deleted and recreated with the same ID
	// (impossible with random IDs, but then the old state is stale).
	cfg := s.groupConfig(groupID)
	p := &Partition{Log: log}
	p.Share = sharepartition.New(s.partitionConfig(key, cfg, p), s.timers)
	offs := log.Offsets()
	start := offs.HighWatermark
	switch cfg.AutoOffsetReset.Kind {
	case group.ResetEarliest:
		start = offs.LogStart
	case group.ResetByDuration:
		since := s.clock.Now().Add(-cfg.AutoOffsetReset.Duration).UnixMilli()
		if off, _, found := log.OffsetForTimestamp(since); found {
			start = off
		}
	}
	p.Share.InitializeIfNeeded(start)
	s.byKey[key] = p
	return p
}

// partitionConfig turns a group's effective config into the share
// partition's settings. Expiries and releases wake the fetches parked on p;
// with a journal, persisted changes go to it under key.
func (s *Service) partitionConfig(key Key, cfg group.ShareGroupConfig, p *Partition) sharepartition.Config {
	var persist func(sharepartition.Persisted)
	if j := s.journal; j != nil {
		persist = func(st sharepartition.Persisted) { j.SharePersisted(key, st) }
	}
	return sharepartition.Config{
		OnDeadLetter:       s.deadLetterHook(key, cfg.DeadLetter),
		Persist:            persist,
		LockDuration:       cfg.RecordLockDuration,
		DeliveryCountLimit: int16(cfg.DeliveryCountLimit),
		MaxRecordLocks:     int64(cfg.PartitionMaxRecordLocks),
		RenewEnabled:       cfg.RenewAcknowledgeEnable,
		ReadCommitted:      cfg.IsolationLevel == group.ReadCommitted,
		OnChange:           p.waiters.Notify,
		Counters:           s.counters,
		StoryEvents:        s.storyEvents,
	}
}

// GroupConfigChanged applies a group's new effective config to each of its
// share partitions; each setting takes effect where the share partition
// next reads it (a new lock duration on the next acquisition or renewal).
// An error means a share partition refused a config the group package
// validated: our bug.
func (s *Service) GroupConfigChanged(groupID string) error {
	cfg := s.groupConfig(groupID)
	var errs []error
	for _, kp := range s.OfGroup(groupID) {
		if err := kp.Part.Share.SetConfig(s.partitionConfig(kp.Key, cfg, kp.Part)); err != nil {
			errs = append(errs, fmt.Errorf("share partition %x-%d: %w", kp.Key.TopicID, kp.Key.Partition, err))
		}
		// A larger in-flight limit or another isolation level may make
		// records acquirable: the sessions look again
		// (share-fetch-ready-set).
		kp.Part.waiters.Notify()
	}
	return errors.Join(errs...)
}

// All returns every share partition; the caller reads each outside the
// registry lock.
func (s *Service) All() []Keyed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Keyed, 0, len(s.byKey))
	for k, p := range s.byKey {
		out = append(out, Keyed{Key: k, Part: p})
	}
	return out
}

// OfGroup returns the share partitions of groupID.
func (s *Service) OfGroup(groupID string) []Keyed {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Keyed
	for k, p := range s.byKey {
		if k.Group == groupID {
			out = append(out, Keyed{Key: k, Part: p})
		}
	}
	return out
}

// Groups lists the groups holding share-partition state, sorted: those
// the coordinator knows, and any whose state outlived (or never had) a
// member.
func (s *Service) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.byKey {
		out = append(out, k.Group)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DropGroup forgets every share partition of a deleted group.
func (s *Service) DropGroup(groupID string) {
	s.mu.Lock()
	var dropped []*Partition
	for key, p := range s.byKey {
		if key.Group == groupID {
			delete(s.byKey, key)
			s.droppedLocked(key, p)
			dropped = append(dropped, p)
		}
	}
	s.mu.Unlock()
	lookAgain(dropped)
}

// lookAgain tells the sessions subscribed to dropped share partitions, so
// their next fetch resolves the partition again and makes its state anew
// (share-fetch-ready-set).
func lookAgain(dropped []*Partition) {
	for _, p := range dropped {
		p.waiters.Notify()
	}
}

// droppedLocked tells the journal key's state is gone, once p's own
// writes have stopped: a change p made just before, still being written,
// must not land after the deletion (or after the first write of a share
// partition made anew for key).
func (s *Service) droppedLocked(key Key, p *Partition) {
	p.dropped.Store(true)
	p.Share.StopPersisting()
	if s.journal != nil {
		s.journal.ShareDropped(key)
	}
}

// DropTopic forgets groupID's share partitions of one topic and returns
// how many there were.
func (s *Service) DropTopic(groupID string, topicID storage.TopicID) int {
	s.mu.Lock()
	var dropped []*Partition
	for key, p := range s.byKey {
		if key.Group == groupID && key.TopicID == topicID {
			delete(s.byKey, key)
			s.droppedLocked(key, p)
			dropped = append(dropped, p)
		}
	}
	s.mu.Unlock()
	lookAgain(dropped)
	return len(dropped)
}

// closeSession closes key's session, if any, and releases what its member
// holds on the session's partitions (row 8: the attempt counts, and the
// delivery limit applies).
func (s *Service) closeSession(key SessionKey, now time.Time) {
	s.release(key, s.Sessions.close(key), sharepartition.ReasonSessionClosed, now)
}

// OwnerClosed ends the share sessions the connection owner opened and
// releases their members' records (row 8): a consumer that crashes or
// disconnects gives its records back now, not when their locks expire.
func (s *Service) OwnerClosed(owner any, now time.Time) {
	for key, parts := range s.Sessions.closedOwner(owner) {
		s.release(key, parts, sharepartition.ReasonConnectionClosed, now)
	}
}

// release releases key's member's records on parts, only where the
// session's node leads: Kafka's SharePartitionManager.releaseSession looks
// in the node's own share-partition cache, which holds only what it leads.
// why (session or connection closed) goes into the records' stories.
func (s *Service) release(key SessionKey, parts []TopicPartition, why sharepartition.StoryReason, now time.Time) {
	for _, tp := range parts {
		if s.edge != nil && s.edge.Leads(key.Node, tp) != nil {
			continue
		}
		if p := s.Lookup(Key{Group: key.Group, TopicPartition: tp}); p != nil {
			p.Share.ReleaseMember(key.Member, why, now)
		}
	}
}

// LeaderMoved hands every share partition of one topic partition, of
// every group, from node from to node to (docs/cluster.md
// move-frees-acquired): ACQUIRED records become AVAILABLE with the
// delivery count Kafka persisted, their locks end without firing, and the
// new leader serves the rest of the state at once. The broker calls it
// after the placement changed (a test move or a node stop), so an
// acquisition on the old leader either finished before the handover, which
// frees it, or sees that its node no longer leads. Sessions are untouched:
// as in Kafka, the partition stays in the member's session on the old
// leader until the client forgets it. A move to the same node changes
// nothing (Kafka's share partition stays while its broker remains leader).
// It returns the number of records freed.
func (s *Service) LeaderMoved(topicID storage.TopicID, partition int32, from, to int32) int64 {
	if from == to {
		return 0
	}
	tp := TopicPartition{TopicID: topicID, Partition: partition}
	s.mu.Lock()
	var parts []*Partition
	for k, p := range s.byKey {
		if k.TopicPartition == tp {
			parts = append(parts, p)
		}
	}
	s.mu.Unlock()
	var freed int64
	now := s.clock.Now()
	for _, p := range parts {
		p.moving.Lock()
		freed += p.Share.LeaderMoved(now)
		p.moving.Unlock()
		p.waiters.Notify()
	}
	return freed
}

// Lag returns the share partition's SPSO and its lag: the records still to
// be delivered, the high watermark minus the SPSO minus the records
// already finished (acknowledged or archived) inside the in-flight window
// (share-groups.md §5.1). Both are -1 before the SPSO is chosen.
func (p *Partition) Lag() (spso, lag int64) {
	snap, lag := p.Inspect()
	if !snap.Initialized {
		return -1, -1
	}
	return snap.SPSO, lag
}

// Inspect returns the share partition's window and its lag (as Lag: -1
// before the SPSO is chosen) from one snapshot.
func (p *Partition) Inspect() (snap sharepartition.Snapshot, lag int64) {
	snap = p.Share.Snapshot()
	if !snap.Initialized {
		return snap, -1
	}
	finished := int64(0)
	for _, rs := range snap.Ranges {
		if rs.State.Terminal() {
			first := max(rs.FirstOffset, snap.SPSO)
			if rs.LastOffset >= first {
				finished += rs.LastOffset - first + 1
			}
		}
	}
	hw := p.Log.Offsets().HighWatermark
	return snap, max(hw-snap.SPSO-finished, 0)
}
