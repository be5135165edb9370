package group

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// The plumbing the three coordinators (ClassicGroups, ConsumerGroups,
// ShareGroups) share: finding and claiming a group ID, the retry when a
// group is removed under a holder of its pointer, listing, deleting an
// empty group, closing, and the offset journals of the two kinds that
// keep offsets. Each kind keeps what is its own: how a group is made, when
// it counts as gone, what deleting it also undoes, its messages.

// groupBase is the part of every group the plumbing reaches: its ID and
// the lock that guards the rest of it, taken after the coordinator's mu.
type groupBase struct {
	id string
	mu sync.Mutex
}

func (b *groupBase) base() *groupBase { return b }

// groupLike is a group of one kind, as coordinator sees it.
type groupLike interface {
	base() *groupBase
	// goneLocked says the group was removed (Delete, retention, a
	// conversion); a holder of a stale pointer looks it up again.
	goneLocked() bool
	memberCountLocked() int
}

func (g *classicGroup) goneLocked() bool        { return g.state == ClassicDead }
func (g *classicGroup) memberCountLocked() int  { return len(g.members) }
func (g *consumerGroup) goneLocked() bool       { return g.deleted }
func (g *consumerGroup) memberCountLocked() int { return len(g.members) }
func (g *shareGroup) goneLocked() bool          { return g.deleted }
func (g *shareGroup) memberCountLocked() int    { return len(g.members) }

// coordinator is embedded by each kind's coordinator.
//
// Locking: mu guards groups, retention and closed; each group has its own
// lock, taken after mu.
type coordinator[G groupLike] struct {
	kind     Type
	clock    locktimer.Clock
	registry *Registry
	resolve  TopicResolver
	timers   *locktimer.Service
	// refuseAfterClose makes lookup refuse to create a group once Close
	// ran (classic groups, whose Close answers every waiting request).
	refuseAfterClose bool

	mu        sync.Mutex // guards the fields below
	groups    map[string]G
	retention retentionLoop
	closed    bool
}

// init checks the options every kind requires (their type named by
// options in the error), then validate (the kind's broker-level config),
// and makes the coordinator empty; a nil registry makes a private one.
func (c *coordinator[G]) init(kind Type, options string, clock locktimer.Clock, registry *Registry, topics TopicResolver, validate func() error) error {
	if clock == nil || topics == nil {
		return fmt.Errorf("group: %s needs Clock and Topics", options)
	}
	if err := validate(); err != nil {
		return err
	}
	if registry == nil {
		registry = NewRegistry()
	}
	c.kind, c.clock, c.registry, c.resolve = kind, clock, registry, topics
	c.timers = locktimer.NewService(clock, nil)
	c.groups = make(map[string]G)
	return nil
}

// lookup finds group id of this kind; when create is set, a missing one is
// claimed in the registry and made by add (with mu held). A missing group
// is ErrGroupIDNotFound with notFound as its message (a format taking the
// ID); an ID of another group type fails as Registry.Check says.
func (c *coordinator[G]) lookup(id string, create bool, notFound string, add func(id string) G) (G, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var none G
	if err := c.registry.Check(id, c.kind); err != nil {
		return none, err
	}
	if g, ok := c.groups[id]; ok {
		return g, nil
	}
	if !create {
		return none, fmt.Errorf("%w: "+notFound, ErrGroupIDNotFound, id)
	}
	if c.refuseAfterClose && c.closed {
		return none, fmt.Errorf("%w: the broker is shutting down", ErrCoordinatorNotAvailable)
	}
	if err := c.registry.Claim(id, c.kind); err != nil {
		return none, err
	}
	return add(id), nil
}

// withGroupFrom runs fn with group id, found by lookup, locked, looking
// again when it finds the group gone under it. If the group cannot be had
// (missing, or of another type), the answer is missing when set, else
// lookup's error.
func (c *coordinator[G]) withGroupFrom(lookup func(id string, create bool) (G, error),
	id string, create bool, missing error, fn func(g G) error) error {
	for {
		g, err := lookup(id, create)
		if err != nil {
			if missing != nil {
				return missing
			}
			return err
		}
		b := g.base()
		b.mu.Lock()
		if g.goneLocked() {
			b.mu.Unlock()
			continue
		}
		err = fn(g)
		b.mu.Unlock()
		return err
	}
}

// answerFrom is withGroupFrom for an fn that answers something: the
// Heartbeat of the KIP-848 and share kinds.
func answerFrom[G groupLike, R any](c *coordinator[G], lookup func(id string, create bool) (G, error),
	id string, create bool, fn func(g G) (R, error)) (R, error) {
	var res R
	err := c.withGroupFrom(lookup, id, create, nil, func(g G) error {
		var err error
		res, err = fn(g)
		return err
	})
	return res, err
}

// armTimer makes *h fire fire at deadline: a timer scheduled the first
// time, the same timer moved after (a session or revocation deadline that
// each heartbeat pushes back).
func (c *coordinator[G]) armTimer(h **locktimer.Handle, deadline time.Time, fire func()) {
	if *h == nil {
		*h = c.timers.Schedule(deadline, fire)
	} else {
		c.timers.Reset(*h, deadline)
	}
}

// describeGroups is the Describe of the KIP-848 and share kinds: for each
// of ids, in request order, what described makes of the group, found by
// lookup and locked, or what failed makes of its error. An empty ID is
// ErrInvalidGroupID; a missing or removed group, or an ID of another type,
// is ErrGroupIDNotFound, as Kafka says the same for both.
func describeGroups[G groupLike, D any](c *coordinator[G], lookup func(id string, create bool) (G, error), ids []string,
	described func(g G) D, failed func(id string, err error) D) []D {
	out := make([]D, 0, len(ids))
	for _, id := range ids {
		var d D
		err := fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
		if id != "" {
			missing := fmt.Errorf("%w: group %s is not a %s group", ErrGroupIDNotFound, id, c.kind)
			err = c.withGroupFrom(lookup, id, false, missing, func(g G) error {
				d = described(g)
				return nil
			})
		}
		if err != nil {
			d = failed(id, err)
		}
		out = append(out, d)
	}
	return out
}

// snapshot returns every group, taken under mu; the caller locks each.
func (c *coordinator[G]) snapshot() []G {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.groups))
}

// listLive calls listed, with the group locked, for every group not gone,
// in group ID order, and returns what it made: the List of each kind.
func listLive[G groupLike, L any](c *coordinator[G], listed func(g G) L) []L {
	groups := c.snapshot()
	slices.SortFunc(groups, func(a, b G) int { return cmp.Compare(a.base().id, b.base().id) })
	out := make([]L, 0, len(groups))
	for _, g := range groups {
		b := g.base()
		b.mu.Lock()
		if !g.goneLocked() {
			out = append(out, listed(g))
		}
		b.mu.Unlock()
	}
	return out
}

// deleteEmpty removes group id if it has no members (DeleteGroups); remove
// does the kind's part of it, with mu and the group's lock held, and must
// forget the group and release its ID.
func (c *coordinator[G]) deleteEmpty(id string, remove func(g G)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[id]
	if !ok {
		return fmt.Errorf("%w: group %s is not a %s group", ErrGroupIDNotFound, id, c.kind)
	}
	b := g.base()
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := g.memberCountLocked(); n > 0 {
		return fmt.Errorf("%w: group %s has %d members", ErrNonEmptyGroup, id, n)
	}
	remove(g)
	return nil
}

// close marks the coordinator closed and stops every timer; it returns the
// groups it held, for a kind that answers what waits in them.
func (c *coordinator[G]) close() []G {
	c.mu.Lock()
	c.closed = true
	groups := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	c.timers.Close()
	return groups
}

// armRetentionLocked arms the offset retention check (docs/groups.md
// retention) unless it is armed or the coordinator closed; mu is held.
// check runs every interval while any group exists, so an idle broker
// keeps no timer for it.
func (c *coordinator[G]) armRetentionLocked(interval time.Duration, check func(now time.Time)) {
	if c.closed {
		return
	}
	c.retention.armLocked(c.timers, c.clock, interval, &c.mu, check,
		func() bool { return len(c.groups) > 0 && !c.closed })
}

// offsetJournals is embedded by the two kinds that keep committed offsets
// (classic and KIP-848): the hooks of journal.go, each nil without a data
// directory.
type offsetJournals struct {
	kind Type
	// journal is told every change of committed offsets.
	journal OffsetJournal
	// pendingJournal is told every change of a transaction's pending
	// offset commits.
	pendingJournal PendingJournal
}

// SetJournal makes j receive every later change of committed offsets. Call
// it once, before the coordinator serves.
func (j *offsetJournals) SetJournal(f OffsetJournal) { j.journal = f }

// SetPendingJournal makes j receive every later change of pending
// transactional commits. Call it once, before the coordinator serves.
func (j *offsetJournals) SetPendingJournal(f PendingJournal) { j.pendingJournal = f }

// journalLocked tells the journal group id's committed offsets st; the
// group's lock is held.
func (j *offsetJournals) journalLocked(id string, st *offsetStore) {
	if j.journal != nil {
		j.journal(id, j.kind, st.storedLocked())
	}
}

// journalGoneLocked tells the journal group id is gone; its lock is held.
func (j *offsetJournals) journalGoneLocked(id string) {
	if j.journal != nil {
		j.journal(id, j.kind, nil)
	}
}

// journalPendingLocked tells the pending journal producerID's pending
// commits in st (none: settled); the group's lock is held.
func (j *offsetJournals) journalPendingLocked(id string, producerID int64, st *offsetStore) {
	if j.pendingJournal == nil {
		return
	}
	var offsets []StoredOffset
	if m := st.pending[producerID]; len(m) > 0 {
		offsets = storedOffsets(m)
	}
	j.pendingJournal(id, j.kind, producerID, offsets)
}

// completeTxnLocked settles producerID's pending commits in group id's
// offsets st (end-txn) and journals what changed; the group's lock is held.
func (j *offsetJournals) completeTxnLocked(id string, st *offsetStore, producerID int64, commit bool, now time.Time) {
	_, had := st.pending[producerID]
	st.completeTxnLocked(producerID, commit, now)
	if commit {
		j.journalLocked(id, st)
	}
	if had {
		j.journalPendingLocked(id, producerID, st)
	}
}
