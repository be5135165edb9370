package shareserve

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/sharebroker/sharebroker/storage"
)

// Share sessions (KIP-932, share-groups.md §2.4). A share consumer opens a
// session on each broker it fetches from with ShareSessionEpoch 0, then
// sends incremental requests with the epoch the broker expects next, and
// closes it with -1. The session remembers which partitions the member
// fetches, so incremental requests name only what changed, and which of them
// must appear in the next response.

// Errors of the share-session cache; the broker maps them to codes.
var (
	ErrShareSessionNotFound     = errors.New("share session not found")
	ErrInvalidShareSessionEpoch = errors.New("invalid share session epoch")
	ErrShareSessionLimit        = errors.New("share session limit reached")
)

// SessionKey identifies a session: one per (group, member) per node, as
// each broker of a Kafka cluster keeps its own share sessions and a member
// fetches from every leader of its partitions.
type SessionKey struct {
	Group, Member string
	Node          int32
}

// TopicPartition names a partition by topic ID, as share requests do.
type TopicPartition struct {
	TopicID   storage.TopicID
	Partition int32
}

// SessionPartition is one partition of a session.
type SessionPartition struct {
	TopicPartition
	// MustAppear is set for a partition added since the last response, or
	// whose last fetch failed: an incremental response must include it even
	// with nothing to say.
	MustAppear bool
	// seq is the partition's place in the session: partitions are in
	// seq order, and the ready set keeps it (ready.go).
	seq uint64
}

// session is one member's session. Its fields are guarded by Sessions.mu;
// callers work on the copies that methods return.
type session struct {
	key SessionKey
	// owner is the connection that opened it (any comparable value the
	// caller chooses); its close ends the session.
	owner any
	// epoch is the epoch the next request must carry.
	epoch int32
	// parts are never changed in place once returned (copy on write):
	// requests read them without the lock, and none copies them.
	parts []SessionPartition
	// topics are the distinct topics of parts in order, and appearing
	// counts the parts marked MustAppear; both are worked out when parts
	// change (settled), not per request.
	topics    []storage.TopicID
	appearing int
	// nextSeq is the seq of the next partition to join.
	nextSeq uint64
	// ready is what the session's fetches look at (ready.go); it is
	// closed when the session ends.
	ready *readySet
}

// Sessions holds the share sessions of every node; each node's are its
// own cache, as each Kafka broker has its ShareSessionCache, with its own
// limit. It is safe for concurrent use; every method takes mu for one
// change.
type Sessions struct {
	mu     sync.Mutex // guards byKey and byNode
	byKey  map[SessionKey]*session
	byNode map[int32]int // open sessions per node
	max    int           // group.share.max.share.sessions, per node
	// evicted counts, per node, the sessions ended because their
	// connection closed rather than by a closing request (Kafka's
	// ShareSessionEvictionsPerSec counts exactly those).
	evicted map[int32]int64
}

func newSessions(max int) *Sessions {
	return &Sessions{byKey: make(map[SessionKey]*session), byNode: make(map[int32]int), max: max,
		evicted: make(map[int32]int64)}
}

// nextEpoch is the epoch after e: one more, wrapping from the largest int32
// to 1 (0 and -1 mean open and close).
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// open starts a session for key on the connection owner holding exactly
// parts, all marked to appear. An existing session for the key is replaced;
// its records are not released, because they stay owned by the member ID
// and the member may still acknowledge them. It fails with
// ErrShareSessionLimit when the key's node already holds the most sessions
// allowed.
func (s *Sessions) open(key SessionKey, owner any, parts []TopicPartition) ([]SessionPartition, error) {
	v, err := s.openView(key, owner, parts)
	return v.parts, err
}

// sessionView is a session as one request found it after its epoch: the
// partitions (shared, read-only), their distinct topics, whether any must
// appear, and the ready set.
type sessionView struct {
	parts     []SessionPartition
	topics    []storage.TopicID
	appearing bool
	ready     *readySet
}

func (sess *session) view() sessionView {
	return sessionView{parts: slices.Clip(sess.parts), topics: sess.topics, appearing: sess.appearing > 0, ready: sess.ready}
}

// settle works out topics and appearing after parts changed.
func (sess *session) settle() {
	sess.topics, sess.appearing = nil, 0
	for _, p := range sess.parts {
		if !slices.Contains(sess.topics, p.TopicID) {
			sess.topics = append(sess.topics, p.TopicID)
		}
		if p.MustAppear {
			sess.appearing++
		}
	}
}

func (s *Sessions) openView(key SessionKey, owner any, parts []TopicPartition) (sessionView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, replacing := s.byKey[key]
	if n := s.byNode[key.Node]; !replacing && n >= s.max {
		return sessionView{}, fmt.Errorf("%w: the broker holds %d share sessions (group.share.max.share.sessions)", ErrShareSessionLimit, n)
	}
	if old := s.byKey[key]; old != nil {
		old.ready.close()
	} else {
		s.byNode[key.Node]++
	}
	sess := &session{key: key, owner: owner, epoch: 1, ready: newReadySet(len(parts)),
		parts: make([]SessionPartition, 0, len(parts))}
	for _, tp := range parts {
		sess.add(tp)
	}
	sess.settle()
	s.byKey[key] = sess
	return sess.view(), nil
}

// advance checks an incremental request's epoch (> 0), bumps it, adds the
// partitions the request names and removes the forgotten ones (a partition
// in both lists ends up removed). It returns the session's partitions after
// the change. The bump happens even if the request fails later.
func (s *Sessions) advance(key SessionKey, epoch int32, added, forgotten []TopicPartition) ([]SessionPartition, error) {
	v, err := s.advanceView(key, epoch, added, forgotten)
	return v.parts, err
}

func (s *Sessions) advanceView(key SessionKey, epoch int32, added, forgotten []TopicPartition) (sessionView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.checkLocked(key, epoch)
	if err != nil {
		return sessionView{}, err
	}
	sess.epoch = nextEpoch(sess.epoch)
	n := len(sess.parts)
	for _, tp := range added {
		sess.add(tp) // appends: what earlier requests hold is unchanged
	}
	changed := len(sess.parts) != n
	// A rebalance forgets many partitions at once: one copy, one pass.
	gone := 0
	for _, tp := range forgotten {
		if sess.ready.forget(tp) {
			gone++
		}
	}
	if gone > 0 {
		kept := make([]SessionPartition, 0, len(sess.parts)-gone)
		for _, p := range sess.parts {
			if _, ok := sess.ready.seqOf(p.TopicPartition); ok {
				kept = append(kept, p)
			}
		}
		sess.parts, changed = kept, true
		sess.renumberIfSparse()
	}
	if changed {
		sess.settle()
	}
	return sess.view(), nil
}

// fetchEpoch applies a ShareFetch's epoch (share-groups.md §2.4): 0 opens
// a session holding exactly named (open), -1 needs an open session and
// changes nothing (the request closes it after answering), anything else
// must be the expected epoch and adds named and drops forgotten
// (advance). It returns the session's partitions after the change, none
// for -1.
func (s *Sessions) fetchEpoch(key SessionKey, owner any, epoch int32, named, forgotten []TopicPartition) (sessionView, error) {
	switch epoch {
	case 0:
		return s.openView(key, owner, named)
	case -1:
		return sessionView{}, s.exists(key)
	default:
		return s.advanceView(key, epoch, named, forgotten)
	}
}

// readyOf returns the ready set of key's session, nil without one.
func (s *Sessions) readyOf(key SessionKey) *readySet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.byKey[key]; sess != nil {
		return sess.ready
	}
	return nil
}

// ackEpoch checks a ShareAcknowledge's epoch (share-groups.md §3.2): 0
// is never valid there; -1 needs an open session and does not bump;
// anything else must match and bumps. The request's partitions do not join
// the session.
func (s *Sessions) ackEpoch(key SessionKey, epoch int32) error {
	if epoch == 0 {
		return fmt.Errorf("%w: ShareAcknowledge cannot open a session (epoch 0)", ErrInvalidShareSessionEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == -1 {
		if s.byKey[key] == nil {
			return notFound(key)
		}
		return nil
	}
	sess, err := s.checkLocked(key, epoch)
	if err != nil {
		return err
	}
	sess.epoch = nextEpoch(sess.epoch)
	return nil
}

// exists reports whether key has a session; a closing request (-1) needs one.
func (s *Sessions) exists(key SessionKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key] == nil {
		return notFound(key)
	}
	return nil
}

func notFound(key SessionKey) error {
	return fmt.Errorf("%w: group %q member %q", ErrShareSessionNotFound, key.Group, key.Member)
}

func (s *Sessions) checkLocked(key SessionKey, epoch int32) (*session, error) {
	sess := s.byKey[key]
	if sess == nil {
		return nil, notFound(key)
	}
	if epoch != sess.epoch {
		return nil, fmt.Errorf("%w: got %d, expected %d", ErrInvalidShareSessionEpoch, epoch, sess.epoch)
	}
	return sess, nil
}

// responded records what the response to the session's last request said:
// each of said appeared in it, and its MustAppear is whether it must
// appear again (it failed). said is in session order (by seq), as the
// session's partitions are, so each is found by a binary search from the
// last one found: no lookup by name (a full answer lists thousands). A
// partition forgotten since, or whose seq another request's renumbering
// gave another partition, keeps its mark.
func (s *Sessions) responded(key SessionKey, said []SessionPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byKey[key]
	if sess == nil {
		return
	}
	copied := false
	from := 0
	for _, sp := range said {
		rest := sess.parts[from:]
		i, found := slices.BinarySearchFunc(rest, sp.seq, func(p SessionPartition, seq uint64) int { return cmp.Compare(p.seq, seq) })
		from += i
		if !found || sess.parts[from].TopicPartition != sp.TopicPartition {
			// Gone, or renumbered (renumberIfSparse) by a request that
			// ran meanwhile: leave its mark as it is.
			continue
		}
		if sess.parts[from].MustAppear != sp.MustAppear {
			if !copied { // requests may hold the old slice
				sess.parts, copied = slices.Clone(sess.parts), true
			}
			sess.parts[from].MustAppear = sp.MustAppear
			if sp.MustAppear {
				sess.appearing++
			} else {
				sess.appearing--
			}
		}
		from++
	}
}

// renumberIfSparse gives the partitions seqs 0, 1, ... again once
// forgotten ones have left more gaps than partitions, so the ready set's
// index by seq stays in proportion to the session, however many
// rebalances it has seen. The order is unchanged.
func (sess *session) renumberIfSparse() {
	if sess.nextSeq <= 2*uint64(len(sess.parts))+64 {
		return
	}
	parts := slices.Clone(sess.parts) // requests may hold the old slice
	for i := range parts {
		parts[i].seq = uint64(i)
	}
	sess.parts, sess.nextSeq = parts, uint64(len(parts))
	sess.ready.renumber(parts)
}

// close removes key's session and returns its partitions, whose records the
// caller releases.
func (s *Sessions) close(key SessionKey) []TopicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byKey[key]
	if sess == nil {
		return nil
	}
	s.removeLocked(key)
	sess.ready.close()
	return sess.topicPartitions()
}

func (s *Sessions) removeLocked(key SessionKey) {
	delete(s.byKey, key)
	if s.byNode[key.Node]--; s.byNode[key.Node] == 0 {
		delete(s.byNode, key.Node)
	}
}

// closedOwner removes every session opened on owner, returning each with
// its partitions for release. A session re-opened on another connection
// since stays.
func (s *Sessions) closedOwner(owner any) map[SessionKey][]TopicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var closed map[SessionKey][]TopicPartition
	for key, sess := range s.byKey {
		if sess.owner != owner {
			continue
		}
		if closed == nil {
			closed = make(map[SessionKey][]TopicPartition)
		}
		closed[key] = sess.topicPartitions()
		s.removeLocked(key)
		sess.ready.close()
		s.evicted[key.Node]++
	}
	return closed
}

// Count returns the number of open sessions on every node.
func (s *Sessions) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// NodeStats is one node's share-session cache as metrics see it.
type NodeStats struct {
	Sessions   int   // open sessions
	Partitions int   // partitions across them, each session's counted
	Evictions  int64 // sessions ended by their connection closing
}

// StatsOn returns node's figures; O(sessions), for scrapes.
func (s *Sessions) StatsOn(node int32) NodeStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := NodeStats{Sessions: s.byNode[node], Evictions: s.evicted[node]}
	for key, sess := range s.byKey {
		if key.Node == node {
			st.Partitions += len(sess.parts)
		}
	}
	return st
}

// add makes tp a partition of the session unless it is one; the ready
// set tells whether it is, without a scan of the partitions, as it takes
// it in.
func (sess *session) add(tp TopicPartition) {
	if sess.ready.add(tp, sess.nextSeq) {
		return
	}
	sess.parts = append(sess.parts, SessionPartition{TopicPartition: tp, MustAppear: true, seq: sess.nextSeq})
	sess.nextSeq++
}

func (sess *session) topicPartitions() []TopicPartition {
	tps := make([]TopicPartition, len(sess.parts))
	for i, p := range sess.parts {
		tps[i] = p.TopicPartition
	}
	return tps
}
