// Package connquota bounds what the connections of a listener may hold, as
// Kafka's SocketServer does: a cap on one listener's connections
// (max.connections, Kafka's ConnectionQuotas.inc waiting in
// waitForConnectionSlot), a cap on the connections from one IP
// (max.connections.per.ip, ConnectionQuotas refusing with
// TooManyConnectionsException), and connections with nothing to do closed
// after an idle time (connections.max.idle.ms, Selector's
// IdleExpiryManager). The broker wraps each Kafka listener in one, and the
// HTTP listener uses the listener cap alone (docs/security.md, "Who may
// reach the HTTP listener").
//
// Idle time runs on the broker clock (a locktimer.Clock), so a test on the
// manual clock moves past it and sees the connection closed. The request
// path pays two atomic stores per request and one clock reading; one timer
// per Quotas, armed while it tracks a connection, finds the idle ones.
package connquota

import (
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// Limits are the bounds a Quotas applies. A zero or negative field is no
// bound.
type Limits struct {
	// MaxConnections caps the connections one Listener holds at once
	// (max.connections). At the cap its Accept waits for one of them to
	// close before it takes the next from the kernel, as Kafka's acceptor
	// blocks (Kafka takes the one socket first and then waits; waiting
	// first leaves it in the listen backlog, costing this process no file
	// descriptor).
	MaxConnections int
	// MaxPerIP caps the connections from one client IP across every
	// Listener of the Quotas (max.connections.per.ip). One over it is
	// closed as soon as it is accepted, as Kafka closes it.
	MaxPerIP int
	// MaxIdle closes a connection that has been idle this long on the
	// clock (connections.max.idle.ms): idle is the time since its last
	// answer went out (or it was accepted) with no request in hand; a
	// request is in hand from the moment its frame is whole (Busy) until
	// its answer is about to be written (Idle), so one parked in a long
	// poll is never idle.
	MaxIdle time.Duration
}

// Quotas holds the connection counts of one node's listeners and closes
// their idle connections. Make it with New.
type Quotas struct {
	clock  locktimer.Clock
	limits Limits
	log    *slog.Logger

	mu sync.Mutex // guards the fields below
	// perIP counts the open connections of each client IP; an IP is
	// deleted when its count drops to zero.
	perIP map[netip.Addr]int
	// tracked are the connections the idle sweep looks at (with MaxIdle
	// set).
	tracked map[*Conn]struct{}
	// sweep is the idle sweep's timer on the clock, armed while tracked
	// is not empty.
	sweep locktimer.Timer
	// sweepGen names the armed sweep: a callback that lost the race with
	// Stop finds a newer generation and does nothing.
	sweepGen uint64
	closed   bool
}

// New returns quotas applying limits, with idle time read from clock.
// Refused and idle-closed connections are logged to log (nil: not logged).
func New(clock locktimer.Clock, limits Limits, log *slog.Logger) *Quotas {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Quotas{clock: clock, limits: limits, log: log, perIP: make(map[netip.Addr]int), tracked: make(map[*Conn]struct{})}
}

// Close stops the idle sweep. Connections already accepted stay open;
// their owner closes them.
func (q *Quotas) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.sweepGen++
	if q.sweep != nil {
		q.sweep.Stop()
		q.sweep = nil
	}
}

// Listener wraps ln so that its Accept keeps q's bounds and returns
// *Conn connections, which give their slot back when closed.
func (q *Quotas) Listener(ln net.Listener) *Listener {
	return &Listener{Listener: ln, q: q, freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Listener is a net.Listener within a Quotas' bounds.
type Listener struct {
	net.Listener
	q *Quotas

	mu    sync.Mutex // guards count
	count int        // connections accepted and not yet closed
	// freed holds a token once a connection closes, which wakes an
	// Accept waiting at MaxConnections; one token is enough, because
	// Accept checks the count again before it takes a slot.
	freed     chan struct{}
	done      chan struct{} // closed by Close: a waiting Accept returns
	closeOnce sync.Once
}

// Accept waits for a free slot (MaxConnections), then for a connection,
// and closes at once any connection from an IP already at MaxPerIP. The
// connection it returns is a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		if err := l.takeSlot(); err != nil {
			return nil, err
		}
		nc, err := l.Listener.Accept()
		if err != nil {
			l.giveSlot()
			return nil, err
		}
		if c := l.q.admit(l, nc); c != nil {
			return c, nil
		}
	}
}

// Close closes the listener; an Accept waiting for a slot returns
// net.ErrClosed.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Count is how many of the listener's connections are open, counting
// the slot an Accept under way has taken for the connection it waits for.
func (l *Listener) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (l *Listener) takeSlot() error {
	limit := l.q.limits.MaxConnections
	for {
		l.mu.Lock()
		if limit <= 0 || l.count < limit {
			l.count++
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		select {
		case <-l.freed:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

func (l *Listener) giveSlot() {
	l.mu.Lock()
	l.count--
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default: // a token is already waiting
	}
}

// admit counts nc against its IP and starts tracking it for idleness; an
// IP at MaxPerIP gets nc closed and nil.
func (q *Quotas) admit(l *Listener, nc net.Conn) *Conn {
	ip := remoteIP(nc)
	c := &Conn{Conn: nc, l: l, ip: ip}
	q.mu.Lock()
	if max := q.limits.MaxPerIP; max > 0 && q.perIP[ip] >= max {
		q.mu.Unlock()
		nc.Close()
		l.giveSlot()
		q.log.Info("connection refused: its address has max.connections.per.ip connections already",
			"remote", nc.RemoteAddr().String(), "max_connections_per_ip", max)
		return nil
	}
	q.perIP[ip]++
	if q.limits.MaxIdle > 0 && !q.closed {
		c.active.Store(q.clock.Now().UnixNano())
		q.tracked[c] = struct{}{}
		if q.sweep == nil {
			// Every connection tracked later goes idle no earlier
			// than now, so its deadline is no earlier than this.
			q.armLocked(q.limits.MaxIdle)
		}
	}
	q.mu.Unlock()
	return c
}

// release gives back what c held: its IP's count, its tracking, its slot.
func (q *Quotas) release(c *Conn) {
	q.mu.Lock()
	if n := q.perIP[c.ip] - 1; n > 0 {
		q.perIP[c.ip] = n
	} else {
		delete(q.perIP, c.ip)
	}
	delete(q.tracked, c)
	if len(q.tracked) == 0 && q.sweep != nil {
		q.sweep.Stop()
		q.sweep = nil
		q.sweepGen++
	}
	q.mu.Unlock()
	c.l.giveSlot()
}

// armLocked arms the idle sweep d from now. The caller holds q.mu.
func (q *Quotas) armLocked(d time.Duration) {
	q.sweepGen++
	gen := q.sweepGen
	q.sweep = q.clock.AfterFunc(d, func() { q.sweepIdle(gen) })
}

// minSweepGap keeps a crowd of connections going idle at staggered times
// from sweeping without pause: sweeps are at least this far apart (or
// MaxIdle, when that is shorter), so an idle connection closes at most
// this late.
const minSweepGap = time.Second

// sweepIdle closes every tracked connection idle for MaxIdle or longer,
// and arms the next sweep at the earliest deadline of the rest. It runs as
// a clock callback: on the manual clock, inside Advance.
func (q *Quotas) sweepIdle(gen uint64) {
	now := q.clock.Now()
	var idle []*Conn
	q.mu.Lock()
	if q.closed || gen != q.sweepGen {
		q.mu.Unlock()
		return
	}
	q.sweep = nil
	next := now.Add(q.limits.MaxIdle) // a busy connection going idle now
	for c := range q.tracked {
		at := c.active.Load()
		if at == busy {
			continue
		}
		deadline := time.Unix(0, at).Add(q.limits.MaxIdle)
		if !now.Before(deadline) {
			idle = append(idle, c)
			delete(q.tracked, c) // closing it releases the rest
			continue
		}
		if deadline.Before(next) {
			next = deadline
		}
	}
	if len(q.tracked) > 0 {
		q.armLocked(max(next.Sub(now), min(minSweepGap, q.limits.MaxIdle)))
	}
	q.mu.Unlock()
	for _, c := range idle {
		q.log.Debug("closing idle connection", "remote", c.RemoteAddr().String(), "connections_max_idle", q.limits.MaxIdle)
		// The socket itself: a TLS connection over it would first try to
		// write its close alert, which must not block a clock callback.
		c.Conn.Close()
	}
}

// busy marks a connection handling a request: the sweep passes it by.
const busy = math.MinInt64

// Conn is a connection a Listener accepted. Closing it gives its slot
// back. Its owner marks each request with Busy and Idle; the methods are
// no-ops on a nil *Conn, so a connection made without a Listener (a
// test's) needs no check.
type Conn struct {
	net.Conn
	l  *Listener
	ip netip.Addr
	// active is when the connection last finished a request (or was
	// accepted), in Unix nanoseconds on the clock, or busy.
	active   atomic.Int64
	released atomic.Bool
}

// Busy marks the start of a request: the connection is not idle until
// Idle.
func (c *Conn) Busy() {
	if c != nil {
		c.active.Store(busy)
	}
}

// Idle marks the end of a request (its answer written): the connection's
// idle time starts now.
func (c *Conn) Idle() {
	if c != nil && c.l.q.limits.MaxIdle > 0 {
		c.active.Store(c.l.q.clock.Now().UnixNano())
	}
}

// Close closes the connection and gives its slot back, once.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.Release()
	return err
}

// NetConn is the connection Accept took from the kernel. An owner that
// needs the socket's own type (net.Buffers writes with writev only to a
// *net.TCPConn) reads and writes it, closes it, and then calls Release.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Release gives the connection's slot back without closing it, once
// (Close does both); a no-op on a nil *Conn.
func (c *Conn) Release() {
	if c != nil && c.released.CompareAndSwap(false, true) {
		c.l.q.release(c)
	}
}

// remoteIP is the client's IP, IPv4 in its 4-byte form.
func remoteIP(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{} // not TCP (a test's pipe): one shared count
}
