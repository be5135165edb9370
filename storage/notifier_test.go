package storage

import "testing"

// A Notify with nobody watching costs no lock and allocates nothing: every
// append calls it.
func TestNotifyIdleDoesNotAllocate(t *testing.T) {
	var n Notifier
	if a := testing.AllocsPerRun(100, n.Notify); a != 0 {
		t.Errorf("idle Notify allocates %v", a)
	}
}

// A registration is woken once by the next Notify, and not after Unwatch.
func TestNotifierWakesOnce(t *testing.T) {
	var n Notifier
	ch := make(chan struct{}, 1)
	n.Watch(ch)
	n.Notify()
	n.Notify()
	if len(ch) != 1 {
		t.Fatal("the watcher was not woken")
	}
	<-ch
	n.Notify()
	if len(ch) != 0 {
		t.Fatal("a consumed registration woke again")
	}
	n.Watch(ch)
	n.Unwatch(ch)
	n.Notify()
	if len(ch) != 0 {
		t.Fatal("an unwatched channel was woken")
	}
}
