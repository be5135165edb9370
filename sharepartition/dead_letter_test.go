package sharepartition

import (
	"reflect"
	"sync"
	"testing"
)

// deadLog collects what OnDeadLetter reports.
type deadLog struct {
	mu   sync.Mutex
	got  []DeadLetter
	sp   **SharePartition
	free bool // the hook ran without the partition lock held
}

func (d *deadLog) hook(dead []DeadLetter) {
	// TryLock succeeds only if the partition lock is free: the hook must
	// run after the change is unlocked.
	if (*d.sp).mu.TryLock() {
		(*d.sp).mu.Unlock()
		d.free = true
	} else {
		d.free = false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, dead...)
}

func newDeadHarness(t *testing.T, limit int16) (*harness, *deadLog) {
	d := &deadLog{}
	h := newHarness(t, func(c *Config) {
		c.DeliveryCountLimit = limit
		c.OnDeadLetter = d.hook
	})
	d.sp = &h.sp
	return h, d
}

// Each reason that makes a dead letter reports it once, with the delivery
// count the records had, and only after the partition lock is released;
// the other archive reasons report nothing.
func TestDeadLetters(t *testing.T) {
	t.Run("reject", func(t *testing.T) {
		h, d := newDeadHarness(t, 5)
		h.log = batches(0, 4, 4)
		h.acquire("a", 4)
		h.mustAck("a", 0, 1, AckReject)
		h.mustAck("a", 2, 3, AckAccept)
		want := []DeadLetter{{0, 1, 1, DeadLetterRejected}}
		if !reflect.DeepEqual(d.got, want) || !d.free {
			t.Fatalf("got %+v (unlocked %v), want %+v", d.got, d.free, want)
		}
	})
	t.Run("expiry at the limit", func(t *testing.T) {
		h, d := newDeadHarness(t, 2)
		h.log = batches(0, 3, 3)
		h.acquire("a", 3)
		h.advance(lockDur)
		if len(d.got) != 0 {
			t.Fatalf("first expiry reported %+v", d.got)
		}
		h.acquire("a", 3)
		h.advance(lockDur)
		want := []DeadLetter{{0, 2, 2, DeadLetterDeliveryLimit}}
		if !reflect.DeepEqual(d.got, want) || !d.free {
			t.Fatalf("got %+v (unlocked %v), want %+v", d.got, d.free, want)
		}
		h.advance(lockDur) // nothing left to expire: nothing reported twice
		if len(d.got) != 1 {
			t.Fatalf("reported again: %+v", d.got)
		}
	})
	t.Run("release and session close at the limit", func(t *testing.T) {
		h, d := newDeadHarness(t, 2)
		h.log = batches(0, 2, 1)
		h.acquire("a", 2)
		h.mustAck("a", 0, 1, AckRelease)
		h.acquire("a", 2)
		h.mustAck("a", 0, 0, AckRelease)
		h.sp.ReleaseMember("a", ReasonSessionClosed, h.now())
		h.check()
		want := []DeadLetter{{0, 0, 2, DeadLetterDeliveryLimit}, {1, 1, 2, DeadLetterDeliveryLimit}} // two calls, never merged across them
		if !reflect.DeepEqual(d.got, want) {
			t.Fatalf("got %+v, want %+v", d.got, want)
		}
	})
	t.Run("not dead letters", func(t *testing.T) {
		h, d := newDeadHarness(t, 5)
		h.log = batches(0, 6, 2)
		h.acquire("a", 6)
		h.mustAck("a", 0, 1, AckGap)
		h.mustAck("a", 2, 3, AckAccept)
		h.mustAck("a", 4, 5, AckRelease)
		h.sp.LogStartMoved(6, h.now()) // archives AVAILABLE [4,5]: a log-start move
		h.check()
		if len(d.got) != 0 {
			t.Fatalf("reported %+v", d.got)
		}
	})
}
