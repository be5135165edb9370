package sharepartition

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// storyLine is an event in a compact form the tests compare:
// "kind first-last member detail".
func storyLine(e StoryEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d-%d", e.Kind, e.FirstOffset, e.LastOffset)
	if e.Member != "" {
		fmt.Fprintf(&b, " %s", e.Member)
	}
	switch e.Kind {
	case StoryAcquired:
		fmt.Fprintf(&b, " d%d", e.DeliveryCount)
	case StoryAcknowledged, StoryReleased:
		fmt.Fprintf(&b, " %v", e.AckType)
	case StoryArchived, StorySessionClosed:
		fmt.Fprintf(&b, " %v", e.Reason)
	case StoryDeadLettered:
		fmt.Fprintf(&b, " %s/%d@%d", e.DLQTopic, e.DLQPartition, e.DLQOffset)
	}
	return b.String()
}

func expectStory(t *testing.T, h *harness, o int64, want ...string) Story {
	t.Helper()
	st := h.sp.Story(o)
	var got []string
	for _, e := range st.Events {
		got = append(got, storyLine(e))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("story of %d:\n%s\nwant:\n%s", o, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return st
}

// record-story: a record acquired, expired, redelivered and rejected into a
// dead-letter queue tells exactly those events, in order, with their
// broker-clock times; the expiry is told at the lock's deadline.
func TestStoryAcquiredExpiredRedeliveredRejectedDeadLettered(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	t0 := h.now()
	h.acquire("a", 10)
	h.advance(lockDur + time.Second) // the lock expires at t0+lockDur
	t1 := h.now()
	h.acquire("b", 10)
	h.advance(time.Second)
	t2 := h.now()
	h.mustAck("b", 0, 9, AckAccept, AckAccept, AckAccept, AckReject, AckReject, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept)
	// The dead-letter writer reports where the two rejected records went.
	h.sp.DeadLettered(3, 4, "dlq.t", 0, 7, t2)

	st := expectStory(t, h, 4,
		"acquired 0-9 a d1",
		"lock_expired 0-9 a",
		"acquired 0-9 b d2",
		"acknowledged 3-4 b REJECT",
		"archived 3-4 rejected",
		"dead_lettered 3-4 dlq.t/0@7",
	)
	wantTimes := []time.Time{t0, t0.Add(lockDur), t1, t2, t2, t2}
	for i, e := range st.Events {
		if !e.Time.Equal(wantTimes[i]) {
			t.Errorf("event %d (%v) at %v; want %v", i, e.Kind, e.Time, wantTimes[i])
		}
	}
	if !st.Events[0].LockDeadline.Equal(t0.Add(lockDur)) {
		t.Errorf("first lock deadline %v", st.Events[0].LockDeadline)
	}
	if got := st.Events[5].DLQOffsetOf(4); got != 8 {
		t.Errorf("offset 4 went to dead-letter offset %d; want 8", got)
	}
	if st.Record != nil || st.Truncated {
		t.Errorf("record %+v truncated %v: offset 4 is behind the SPSO", st.Record, st.Truncated)
	}
	// Its accepted neighbour's story ends with its acknowledgement: an
	// accepted record is not archived.
	expectStory(t, h, 5, "acquired 0-9 a d1", "lock_expired 0-9 a", "acquired 0-9 b d2", "acknowledged 5-9 b ACCEPT")
}

// record-story: releases, renewals, session closes (with why), leader
// moves, log-start moves and the delivery limit each tell their event; the
// record of an offset in the window is its current state.
func TestStoryEveryEvent(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 2 })
	h.log = batches(0, 30, 10)
	h.acquire("a", 10)                                       // 0-9
	h.mustAck("a", 0, 9, AckRenew)                           // renewed
	h.mustAck("a", 0, 9, AckRelease)                         // released, back to AVAILABLE
	h.acquire("b", 10)                                       // 0-9 again, d2
	h.sp.ReleaseMember("b", ReasonConnectionClosed, h.now()) // at the limit: archived
	expectStory(t, h, 0,
		"acquired 0-9 a d1",
		"renewed 0-9 a",
		"released 0-9 a RELEASE",
		"acquired 0-9 b d2",
		"session_closed 0-9 b connection_closed",
		"archived 0-9 delivery_limit",
	)

	h.acquire("c", 10) // 10-19
	h.sp.LeaderMoved(h.now())
	h.acquire("d", 10) // 10-19 again, d1 (the move undid the attempt)
	st := expectStory(t, h, 12, "acquired 10-19 c d1", "leader_moved 10-19 c", "acquired 10-19 d d1")
	if r := st.Record; r == nil || r.State != Acquired || r.Owner != "d" || r.DeliveryCount != 1 || r.LockDeadline.IsZero() {
		t.Fatalf("record of 12: %+v", r)
	}
	h.sp.ReleaseMember("d", ReasonSessionClosed, h.now())
	h.sp.LogStartMoved(15, h.now())
	expectStory(t, h, 14, "acquired 10-19 c d1", "leader_moved 10-19 c", "acquired 10-19 d d1",
		"session_closed 10-19 d session_closed", "archived 10-14 log_start_moved")

	if got := h.sp.Story(25); got.Record != nil || len(got.Events) != 0 || got.Truncated {
		t.Fatalf("never fetched offset 25: %+v", got)
	}
	var archived []string
	for _, e := range h.sp.StoryKinds(StoryArchived, 100) {
		archived = append(archived, storyLine(e))
	}
	if want := "archived 0-9 delivery_limit\narchived 10-14 log_start_moved"; strings.Join(archived, "\n") != want {
		t.Fatalf("archives:\n%s\nwant:\n%s", strings.Join(archived, "\n"), want)
	}
}

// record-story-bound: a full ring drops its oldest events, and only the
// stories of offsets those events covered say truncated; an event that
// continues the previous one exactly takes no slot.
func TestStoryRingDropsOldest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StoryEvents = 4 })
	h.log = batches(0, 100, 10)
	// Per-offset acknowledgements of one batch are one event per kind.
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept)
	expectStory(t, h, 9, "acquired 0-9 a d1", "acknowledged 0-9 a ACCEPT")
	for i := range 3 {
		h.advance(time.Millisecond) // else acquired 10-19 continues acquired 0-9
		h.acquire("a", 10)
		h.mustAck("a", int64(10+10*i), int64(19+10*i), AckAccept)
	}
	// Eight events through a ring of four: 0-9 and 10-19 are gone.
	for o, want := range map[int64]bool{5: true, 15: true, 25: false, 35: false} {
		if st := h.sp.Story(o); st.Truncated != want || len(st.Events) != map[bool]int{true: 0, false: 2}[want] {
			t.Errorf("offset %d: %d events, truncated %v; want truncated %v", o, len(st.Events), st.Truncated, want)
		}
	}
	if got := h.sp.RecentOffsets(10); fmt.Sprint(got) != "[30 20]" {
		t.Errorf("recent offsets %v", got)
	}
}

// record-story-bound: StoryEvents 0 keeps nothing.
func TestStoryOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StoryEvents = 0 })
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.sp.DeadLettered(0, 0, "dlq", 0, 0, h.now())
	if st := h.sp.Story(0); len(st.Events) != 0 || st.Record == nil {
		t.Fatalf("story with stories off: %+v", st)
	}
}

// record-story-bound: once the ring is full, telling an event allocates
// nothing.
func TestStoryFullRingAllocatesNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StoryEvents = 16 })
	sp := h.sp
	o := int64(0)
	tell := func() {
		sp.mu.Lock()
		sp.tellLocked(StoryAcquired, o, o, "member", h.now(), 0, 1, 0)
		sp.tellLocked(StoryLockExpired, o, o, "member", h.now(), 0, 0, 0)
		o += 2 // not a continuation: each takes a slot
		sp.mu.Unlock()
	}
	for range 32 {
		tell()
	}
	if n := testing.AllocsPerRun(1000, tell); n != 0 {
		t.Fatalf("%v allocations per event pair", n)
	}
}

// record-story: the dead letters the console lists are cut to the newest n
// offsets.
func TestStoryKindsCutsDeadLetters(t *testing.T) {
	h := newHarness(t, nil)
	h.sp.DeadLettered(0, 9, "dlq", 1, 100, h.now())
	h.sp.DeadLettered(20, 24, "dlq", 1, 110, h.now())
	got := h.sp.StoryKinds(StoryDeadLettered, 7)
	if len(got) != 2 || got[0].FirstOffset != 8 || got[0].DLQOffset != 108 || got[1].FirstOffset != 20 || got[1].DLQOffset != 110 {
		t.Fatalf("dead letters %+v", got)
	}
}
