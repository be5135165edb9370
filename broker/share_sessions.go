package broker

import (
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

// Errors of the share-session cache; codeFor maps them.
var (
	errShareSessionNotFound     = errors.New("share session not found")
	errInvalidShareSessionEpoch = errors.New("invalid share session epoch")
	errShareSessionLimit        = errors.New("share session limit reached")
)

// shareSessionKey identifies a session: one per (group, member) per broker.
type shareSessionKey struct {
	group, member string
}

// topicPartition names a partition by topic ID, as share requests do.
type topicPartition struct {
	topicID   storage.TopicID
	partition int32
}

// sessionPartition is one partition of a session.
type sessionPartition struct {
	topicPartition
	// mustAppear is set for a partition added since the last response, or
	// whose last fetch failed: an incremental response must include it even
	// with nothing to say.
	mustAppear bool
}

// shareSession is one member's session. Its fields are guarded by
// shareSessions.mu; handlers work on the copies that methods return.
type shareSession struct {
	key  shareSessionKey
	conn *conn // the connection that opened it; its close ends the session
	// epoch is the epoch the next request must carry.
	epoch int32
	parts []sessionPartition
}

// shareSessions is the broker's cache of share sessions.
type shareSessions struct {
	mu    sync.Mutex
	byKey map[shareSessionKey]*shareSession
	max   int // group.share.max.share.sessions
}

func newShareSessions(max int) *shareSessions {
	return &shareSessions{byKey: make(map[shareSessionKey]*shareSession), max: max}
}

// nextEpoch is the epoch after e: one more, wrapping from the largest int32
// to 1 (0 and -1 mean open and close).
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// open starts a session for key on connection c holding exactly parts, all
// marked to appear. An existing session for the key is replaced; its
// records are not released, because they stay owned by the member ID and
// the member may still acknowledge them. It fails with errShareSessionLimit
// when the broker already holds the most sessions allowed.
func (s *shareSessions) open(key shareSessionKey, c *conn, parts []topicPartition) ([]sessionPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, replacing := s.byKey[key]; !replacing && len(s.byKey) >= s.max {
		return nil, fmt.Errorf("%w: the broker holds %d share sessions (group.share.max.share.sessions)", errShareSessionLimit, len(s.byKey))
	}
	sess := &shareSession{key: key, conn: c, epoch: 1}
	for _, tp := range parts {
		sess.add(tp)
	}
	s.byKey[key] = sess
	return slices.Clone(sess.parts), nil
}

// advance checks an incremental request's epoch (> 0), bumps it, adds the
// partitions the request names and removes the forgotten ones (a partition
// in both lists ends up removed). It returns the session's partitions after
// the change. The bump happens even if the request fails later.
func (s *shareSessions) advance(key shareSessionKey, epoch int32, added, forgotten []topicPartition) ([]sessionPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.checkLocked(key, epoch)
	if err != nil {
		return nil, err
	}
	sess.epoch = nextEpoch(sess.epoch)
	for _, tp := range added {
		sess.add(tp)
	}
	for _, tp := range forgotten {
		sess.parts = slices.DeleteFunc(sess.parts, func(p sessionPartition) bool { return p.topicPartition == tp })
	}
	return slices.Clone(sess.parts), nil
}

// acknowledge checks a ShareAcknowledge's epoch: 0 is never valid there; -1
// needs an open session and does not bump; anything else must match and
// bumps. The request's partitions do not join the session.
func (s *shareSessions) acknowledge(key shareSessionKey, epoch int32) error {
	if epoch == 0 {
		return fmt.Errorf("%w: ShareAcknowledge cannot open a session (epoch 0)", errInvalidShareSessionEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == -1 {
		if s.byKey[key] == nil {
			return fmt.Errorf("%w: group %q member %q", errShareSessionNotFound, key.group, key.member)
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
func (s *shareSessions) exists(key shareSessionKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key] == nil {
		return fmt.Errorf("%w: group %q member %q", errShareSessionNotFound, key.group, key.member)
	}
	return nil
}

func (s *shareSessions) checkLocked(key shareSessionKey, epoch int32) (*shareSession, error) {
	sess := s.byKey[key]
	if sess == nil {
		return nil, fmt.Errorf("%w: group %q member %q", errShareSessionNotFound, key.group, key.member)
	}
	if epoch != sess.epoch {
		return nil, fmt.Errorf("%w: got %d, expected %d", errInvalidShareSessionEpoch, epoch, sess.epoch)
	}
	return sess, nil
}

// responded records what the response to the session's last request said:
// partitions that appeared lose their mark, failed ones get it.
func (s *shareSessions) responded(key shareSessionKey, appeared, failed []topicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byKey[key]
	if sess == nil {
		return
	}
	for i := range sess.parts {
		p := &sess.parts[i]
		if slices.Contains(appeared, p.topicPartition) {
			p.mustAppear = false
		}
		if slices.Contains(failed, p.topicPartition) {
			p.mustAppear = true
		}
	}
}

// close removes key's session and returns its partitions, whose records the
// caller releases.
func (s *shareSessions) close(key shareSessionKey) []topicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byKey[key]
	if sess == nil {
		return nil
	}
	delete(s.byKey, key)
	return sess.topicPartitions()
}

// closedConn removes every session opened on c, returning each with its
// partitions for release. A session re-opened on another connection since
// stays.
func (s *shareSessions) closedConn(c *conn) map[shareSessionKey][]topicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var closed map[shareSessionKey][]topicPartition
	for key, sess := range s.byKey {
		if sess.conn != c {
			continue
		}
		if closed == nil {
			closed = make(map[shareSessionKey][]topicPartition)
		}
		closed[key] = sess.topicPartitions()
		delete(s.byKey, key)
	}
	return closed
}

// count returns the number of open sessions.
func (s *shareSessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

func (sess *shareSession) add(tp topicPartition) {
	for i := range sess.parts {
		if sess.parts[i].topicPartition == tp {
			return
		}
	}
	sess.parts = append(sess.parts, sessionPartition{topicPartition: tp, mustAppear: true})
}

func (sess *shareSession) topicPartitions() []topicPartition {
	tps := make([]topicPartition, len(sess.parts))
	for i, p := range sess.parts {
		tps[i] = p.topicPartition
	}
	return tps
}
