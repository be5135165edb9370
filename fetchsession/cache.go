package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// DefaultSlots is the default of max.incremental.fetch.session.cache.slots,
// the sessions one broker keeps (Kafka's ServerConfigs default, 1000).
const DefaultSlots = 1000

// EvictionAge is how long a session is safe from eviction: one unused for
// longer is evicted for any new session, and only one created longer ago
// may be evicted for a larger one (Kafka's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120 s, not configurable).
const EvictionAge = 120 * time.Second

// Cache is one broker's fetch sessions (Kafka's FetchSessionCache and
// FetchManager), bounded to a number of slots. All sessions are a
// consumer's: a follower's (privileged) sessions do not exist here, and
// the cache is one shard where Kafka 4 splits it in eight. Its zero value
// is not usable; make one with NewCache.
type Cache struct {
	mu        sync.Mutex
	slots     int
	sessions  map[int32]*Session
	partsHeld int   // partitions over all sessions, as last touched
	evictions int64 // sessions evicted for new ones
}

// NewCache makes a cache of slots sessions (slots 0 makes none: every full
// fetch is answered without a session).
func NewCache(slots int) *Cache {
	return &Cache{slots: max(slots, 0), sessions: make(map[int32]*Session)}
}

// Session is one incremental fetch session.
type Session struct {
	id      int32
	usesIDs bool
	created time.Time

	// Guarded by the cache's lock.
	epoch     int32
	lastUsed  time.Time
	evictable bool // created more than EvictionAge before its last use
	size      int  // len(parts) at its last use: what eviction compares
	parts     map[Key]*cached
	head      *cached
	tail      *cached
	// spare is the buffers of the session's last finished request, kept
	// for its next: an incremental fetch of N partitions then copies the
	// session's N entries without allocating them anew.
	spare *buffers
}

// buffers are the per-request copies of an incremental fetch: the
// session's partitions, what each last answered, and what each answers
// now.
type buffers struct {
	parts    []Requested
	answered []lastAnswer
	answers  []Answer
}

// Stats are the cache's gauges and counter (Kafka's
// NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached and the
// IncrementalFetchSessionEvictionsPerSec meter's count).
type Stats struct {
	Sessions   int
	Partitions int
	Evictions  int64
}

// Stats reads the cache's figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.partsHeld, Evictions: c.evictions}
}

// Request is what a Fetch request says that the session rules read.
type Request struct {
	// Version is the Fetch version: before 7 there are no sessions, from
	// 13 topics are named by ID.
	Version    int16
	SessionID  int32
	Epoch      int32
	Partitions []Requested
	Forgotten  []Key
}

// kind is which of Kafka's FetchContext classes a Context is.
type kind uint8

const (
	sessionless kind = iota // SessionlessFetchContext
	full                    // FullFetchContext
	incremental             // IncrementalFetchContext
	failed                  // SessionErrorContext
)

// Context is one request's view of the sessions: the partitions to read and
// how the answer is made from what was read.
type Context struct {
	cache   *Cache
	kind    kind
	err     error
	usesIDs bool
	session *Session
	epoch   int32 // the session's epoch this request moved it to
	parts   []Requested
	// answered is, for an incremental fetch, what each partition of parts
	// last answered when the request came: Keep compares with it without
	// the cache's lock (a request of the session that changes it first
	// makes this one's Finish fail).
	answered []lastAnswer
	answers  []Answer
	// bufs, for an incremental fetch, hold parts, answered and answers,
	// handed back to the session by Release.
	bufs *buffers
}

// NewContext applies a request's session fields (Kafka's
// FetchManager.newContext; rules fetch-session-*):
//
//   - before v7, and with epoch -1 (the final epoch), the fetch is
//     sessionless: its answer names session 0 and carries every partition;
//     a session ID given with epoch -1 closes that session;
//   - with epoch 0 the fetch is full: a session ID given is closed, and
//     Finish creates a session holding the request's partitions when a
//     slot is free or can be freed;
//   - any other epoch continues the session named: unknown answers
//     ErrSessionNotFound, another epoch than the session expects
//     ErrInvalidEpoch, names where the session has topic IDs or the other
//     way round ErrTopicIDMismatch; otherwise the request's partitions are
//     added to the session or update their parameters, the forgotten ones
//     leave it, and the session's epoch moves on. A session left with no
//     partition is closed and the fetch is sessionless.
func (c *Cache) NewContext(now time.Time, req Request) *Context {
	usesIDs := req.Version >= 13
	if req.Version < 7 {
		return &Context{cache: c, kind: sessionless, usesIDs: usesIDs, parts: req.Partitions}
	}
	if req.Epoch == InitialEpoch || req.Epoch == FinalEpoch {
		if req.SessionID != NoSession {
			c.mu.Lock()
			if s := c.sessions[req.SessionID]; s != nil {
				c.removeLocked(s)
			}
			c.mu.Unlock()
		}
		k := full
		if req.Epoch == FinalEpoch {
			k = sessionless
		}
		return &Context{cache: c, kind: k, usesIDs: usesIDs, parts: req.Partitions}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[req.SessionID]
	switch {
	case s == nil:
		return &Context{cache: c, kind: failed, err: ErrSessionNotFound}
	case s.epoch != req.Epoch:
		return &Context{cache: c, kind: failed, err: ErrInvalidEpoch}
	case s.usesIDs != usesIDs:
		return &Context{cache: c, kind: failed, err: ErrTopicIDMismatch}
	}
	for _, p := range req.Partitions {
		s.put(p)
	}
	for _, k := range req.Forgotten {
		s.forget(k)
	}
	if len(s.parts) == 0 {
		c.removeLocked(s)
		return &Context{cache: c, kind: sessionless, usesIDs: usesIDs, parts: req.Partitions}
	}
	c.touchLocked(s, now)
	s.epoch = NextEpoch(s.epoch)
	bufs := s.spare
	s.spare = nil
	if bufs == nil {
		bufs = &buffers{}
	}
	parts, answered := bufs.parts[:0], bufs.answered[:0]
	for p := s.head; p != nil; p = p.next {
		parts = append(parts, p.Requested)
		answered = append(answered, p.lastAnswer)
	}
	answers := bufs.answers[:0]
	answers = append(answers, make([]Answer, len(parts))...)
	bufs.parts, bufs.answered, bufs.answers = parts, answered, answers
	return &Context{cache: c, kind: incremental, usesIDs: usesIDs, session: s, epoch: s.epoch,
		parts: parts, answered: answered, answers: answers, bufs: bufs}
}

// Err is the session error the whole request is answered with, nil when
// its partitions are read.
func (x *Context) Err() error { return x.err }

// Partitions are the partitions to read, in the order the answer lists
// them: the request's for a full or sessionless fetch, the session's
// (with the parameters it keeps) for an incremental one.
func (x *Context) Partitions() []Requested { return x.parts }

// Answers is where the broker puts what each of Partitions() answered,
// for Keep and Finish: as long as Partitions(), zeroed.
func (x *Context) Answers() []Answer {
	if x.answers == nil {
		x.answers = make([]Answer, len(x.parts))
	}
	return x.answers
}

// Release hands the context's buffers back to its session for the next
// request. The context, its Partitions and Answers are not used after.
func (x *Context) Release() {
	if x.bufs == nil {
		return
	}
	x.cache.mu.Lock()
	x.session.spare = x.bufs
	x.cache.mu.Unlock()
	x.bufs, x.parts, x.answered, x.answers = nil, nil, nil, nil
}

// Incremental reports whether the request continued a session, so the
// answer carries only the partitions Finish keeps.
func (x *Context) Incremental() bool { return x.kind == incremental }

// Keep reports whether the answer carries Partitions()[i], read as a:
// always, but in an incremental fetch only when mustAnswer requires it
// (rule fetch-session-incremental). It records nothing; Finish does.
func (x *Context) Keep(i int, a *Answer) bool {
	if x.kind != incremental {
		return true
	}
	return x.answered[i].mustAnswer(a, false)
}

// Finish makes the answer from what was read, answers[i] for
// Partitions()[i], at the end of the request. It returns the session ID
// the answer names and, for an incremental fetch, which partitions it
// carries (keep nil: all of them):
//
//   - a full fetch creates its session now (Kafka's
//     FullFetchContext.updateAndGenerateResponseData), remembering what
//     each partition answered; with no slot to be had the answer names
//     session 0 (rule fetch-session-cache-slots);
//   - an incremental fetch whose session moved on meanwhile (another
//     request of the session finished first) fails with ErrInvalidEpoch
//     and names the session; otherwise it keeps the partitions
//     mustAnswer requires, and moves those that carried records to the
//     back of the session, so the next fetch reads the others first.
func (x *Context) Finish(now time.Time, answers []Answer) (sessionID int32, keep []bool, err error) {
	switch x.kind {
	case failed:
		return NoSession, nil, x.err
	case sessionless:
		return NoSession, nil, nil
	case full:
		return x.cache.maybeCreate(now, x.usesIDs, x.parts, answers), nil, nil
	}
	c, s := x.cache, x.session
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.epoch != x.epoch {
		return s.id, nil, ErrInvalidEpoch
	}
	keep = make([]bool, len(x.parts))
	for i := range x.parts {
		// The snapshot equals the session's entry (the epoch did not
		// move), so a partition the answer leaves out has nothing to
		// record and needs no look-up.
		if !x.answered[i].mustAnswer(&answers[i], false) {
			continue
		}
		keep[i] = true
		p := s.parts[x.parts[i].Key]
		p.mustAnswer(&answers[i], true)
		if answers[i].Records {
			s.toBack(p)
		}
	}
	return s.id, keep, nil
}

// maybeCreate makes a session of parts when the cache has a free slot or
// can free one (Kafka's FetchSessionCache.maybeCreateSession), and returns
// its ID, or NoSession.
func (c *Cache) maybeCreate(now time.Time, usesIDs bool, parts []Requested, answers []Answer) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.slots && !c.evictForLocked(now, len(parts)) {
		return NoSession
	}
	s := &Session{id: c.newIDLocked(), usesIDs: usesIDs, created: now, epoch: NextEpoch(InitialEpoch),
		parts: make(map[Key]*cached, len(parts))}
	for i, p := range parts {
		s.put(p)
		cp := s.parts[p.Key]
		cp.highWatermark, cp.logStart = answers[i].HighWatermark, answers[i].LogStartOffset
	}
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return s.id
}

// newIDLocked picks an unused positive session ID at random, as Kafka
// does, so a client cannot guess another's.
func (c *Cache) newIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32) + 1
		if c.sessions[id] == nil {
			return id
		}
	}
}

// evictForLocked frees a slot for a new session of size partitions, as
// Kafka's FetchSessionCache.tryEvict does for a consumer's session (rule
// fetch-session-eviction): the least recently used session goes if it was
// unused for more than EvictionAge; otherwise the smallest of the
// sessions that were older than EvictionAge when last used goes if it
// holds fewer partitions than the new one. It reports whether it freed
// one.
func (c *Cache) evictForLocked(now time.Time, size int) bool {
	var lru, small *Session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if s.evictable && (small == nil || s.size < small.size || (s.size == small.size && s.id < small.id)) {
			small = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > EvictionAge:
		c.removeLocked(lru)
	case small != nil && size > small.size:
		c.removeLocked(small)
	default:
		return false
	}
	c.evictions++
	return true
}

// touchLocked records a use of s (Kafka's FetchSessionCache.touch): its
// last use, its size for eviction, and whether it was old enough then to
// be evicted for a larger session.
func (c *Cache) touchLocked(s *Session, now time.Time) {
	c.partsHeld += len(s.parts) - s.size
	s.size = len(s.parts)
	s.lastUsed = now
	s.evictable = now.Sub(s.created) > EvictionAge
}

func (c *Cache) removeLocked(s *Session) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.partsHeld -= s.size
}

// put adds p at the back of the session, or updates the parameters of the
// partition the session holds under its key where it is (Kafka's
// FetchSession.update). A partition added remembers high watermark and log
// start -1, so the next answer carries it.
func (s *Session) put(p Requested) {
	if c := s.parts[p.Key]; c != nil {
		c.Params = p.Params
		return
	}
	c := &cached{Requested: p, lastAnswer: lastAnswer{highWatermark: -1, logStart: -1}}
	s.parts[p.Key] = c
	s.linkBack(c)
}

func (s *Session) forget(k Key) {
	c := s.parts[k]
	if c == nil {
		return
	}
	delete(s.parts, k)
	s.unlink(c)
}

func (s *Session) toBack(c *cached) {
	if s.tail == c {
		return
	}
	s.unlink(c)
	s.linkBack(c)
}

func (s *Session) linkBack(c *cached) {
	c.prev, c.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = c
	} else {
		s.head = c
	}
	s.tail = c
}

func (s *Session) unlink(c *cached) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		s.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		s.tail = c.prev
	}
	c.prev, c.next = nil, nil
}
