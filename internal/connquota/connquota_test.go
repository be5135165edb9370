package connquota

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/internal/layering"
	"github.com/sharebroker/sharebroker/locktimer"
)

// TestNoWireNoBroker keeps the package beside the edge: it serves the
// broker's and the HTTP listener's sockets, so net is allowed, but not
// kmsg, wire or the broker.
func TestNoWireNoBroker(t *testing.T) {
	layering.CheckDeps(t, []string{layering.Kmsg, layering.Wire, layering.Broker})
}

// served is a Listener on loopback whose accepted connections arrive on
// accepted.
type served struct {
	ln       *Listener
	accepted chan *Conn
}

func serve(t *testing.T, q *Quotas) *served {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &served{ln: q.Listener(raw), accepted: make(chan *Conn, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			nc, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- nc.(*Conn)
		}
	}()
	t.Cleanup(func() {
		s.ln.Close()
		<-done
		close(s.accepted)
		for c := range s.accepted {
			c.Close()
		}
	})
	return s
}

func (s *served) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *served) next(t *testing.T) *Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted within 10 s")
		return nil
	}
}

// expectClosed reads from the client's side until the server's close
// arrives, within a deadline.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v, want the connection closed (EOF)", err)
	}
}

// expectOpen checks the server has not closed c: a short read times out
// rather than ending.
func expectOpen(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want the connection still open", err)
	}
}

// Rule: max-connections. At the cap, Accept waits: the next client is not
// accepted until one of the listener's connections closes.
func TestMaxConnectionsWaitsForASlot(t *testing.T) {
	s := serve(t, New(locktimer.RealClock{}, Limits{MaxConnections: 2}, nil))
	s.dial(t)
	s.dial(t)
	first, _ := s.next(t), s.next(t)
	s.dial(t)
	select {
	case c := <-s.accepted:
		t.Fatalf("a third connection %v was accepted over max.connections 2", c.RemoteAddr())
	case <-time.After(100 * time.Millisecond):
	}
	if n := s.ln.Count(); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	first.Close()
	s.next(t) // the waiting client gets the freed slot
	if n := s.ln.Count(); n != 2 {
		t.Fatalf("count after the swap %d, want 2", n)
	}
}

// Rule: max-connections. Closing a listener wakes an Accept waiting for a
// slot.
func TestMaxConnectionsCloseWakesAccept(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(locktimer.RealClock{}, Limits{MaxConnections: 1}, nil).Listener(raw)
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		errc <- err
	}()
	ln.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("waiting Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the waiting Accept")
	}
}

// Rule: max-connections-per-ip. A connection from an IP at the cap is
// closed at once; the ones it has stay, and a slot freed by one of them
// admits the next.
func TestMaxPerIPClosesTheExtra(t *testing.T) {
	s := serve(t, New(locktimer.RealClock{}, Limits{MaxPerIP: 1}, nil))
	kept := s.dial(t)
	first := s.next(t)
	extra := s.dial(t)
	expectClosed(t, extra)
	expectOpen(t, kept)
	first.Close()
	expectClosed(t, kept)
	s.dial(t)
	s.next(t)
}

// Rule: connections-max-idle. On the manual clock a connection is closed
// once it has been idle for MaxIdle, not a nanosecond before; a request in
// hand (Busy) keeps it open however long it takes, and its idle time
// starts again when it is answered (Idle). Once nothing is tracked, no
// timer is left on the clock.
func TestIdleConnectionClosedOnTheClock(t *testing.T) {
	clock := locktimer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := New(clock, Limits{MaxIdle: 10 * time.Minute}, nil)
	s := serve(t, q)
	idle, busyClient := s.dial(t), s.dial(t)
	s.next(t)
	working := s.next(t)
	working.Busy()

	clock.Advance(10*time.Minute - time.Nanosecond)
	expectOpen(t, idle)
	clock.Advance(time.Nanosecond)
	expectClosed(t, idle)

	clock.Advance(time.Hour) // a long poll: busy, not idle
	expectOpen(t, busyClient)
	working.Idle()
	clock.Advance(10*time.Minute - time.Nanosecond)
	expectOpen(t, busyClient)
	clock.Advance(time.Nanosecond)
	expectClosed(t, busyClient)
	working.Close()

	// The idle one is closed by its owner after its read fails.
	q.mu.Lock()
	tracked := len(q.tracked)
	q.mu.Unlock()
	if tracked != 0 {
		t.Fatalf("%d connections still tracked", tracked)
	}
	q.Close()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers left on the clock", n)
	}
}

// Rule: max-connections. An owner that works on the socket itself
// (NetConn) and closes it gives the slot back with Release, once.
func TestReleaseGivesTheSlotBack(t *testing.T) {
	s := serve(t, New(locktimer.RealClock{}, Limits{MaxConnections: 1}, nil))
	s.dial(t)
	c := s.next(t)
	c.NetConn().Close()
	c.Release()
	c.Release() // a second is a no-op: the count cannot go below the open ones
	s.dial(t)
	s.next(t)
	if n := s.ln.Count(); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
}
