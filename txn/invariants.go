package txn

import (
	"fmt"
	"maps"
	"slices"
)

// CheckInvariants reports the first broken invariant of the coordinator's
// state, or nil. Tests call it after each request (the broker's fuzz
// targets); it takes the coordinator's lock, so it may run at any time.
//
//   - ids and byPID describe the same transactional IDs: each ID is found
//     under its current producer ID and no other.
//   - Producer IDs are not negative; epochs lie in [0, maxEpoch]; the
//     timeout lies in (0, MaxTimeout].
//   - A transaction has partitions and groups exactly while Ongoing
//     (Prepare* have handed theirs to the completion).
func (c *Coordinator) CheckInvariants() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) != len(c.byPID) {
		return fmt.Errorf("%d transactional IDs but %d producer IDs", len(c.ids), len(c.byPID))
	}
	for _, id := range slices.Sorted(maps.Keys(c.ids)) {
		t := c.ids[id]
		switch {
		case t.id != id:
			return fmt.Errorf("%q is filed under %q", t.id, id)
		case c.byPID[t.producerID] != t:
			return fmt.Errorf("%s: producer ID %d does not lead back to it", id, t.producerID)
		case t.producerID < 0 || t.epoch < 0 || t.epoch > maxEpoch:
			return fmt.Errorf("%s: producer %d epoch %d out of range", id, t.producerID, t.epoch)
		case t.timeout <= 0 || t.timeout > c.cfg.MaxTimeout:
			return fmt.Errorf("%s: timeout %v outside (0, %v]", id, t.timeout, c.cfg.MaxTimeout)
		case t.state < Empty || t.state > CompleteAbort:
			return fmt.Errorf("%s: unknown state %d", id, t.state)
		case t.state == Ongoing && (t.partitions == nil || t.groups == nil):
			return fmt.Errorf("%s: Ongoing without partition and group sets", id)
		case t.state != Ongoing && (len(t.partitions) > 0 || len(t.groups) > 0):
			return fmt.Errorf("%s: %s with %d partitions and %d groups", id, t.state, len(t.partitions), len(t.groups))
		}
	}
	return nil
}
