package sharepartition

import (
	"fmt"
	"time"
)

// AckBatch is one AcknowledgementBatches entry: one type for the whole
// range, or one type per offset.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []AckType
}

func (ab AckBatch) typeAt(o int64) AckType {
	if len(ab.Types) == 1 {
		return ab.Types[0]
	}
	return ab.Types[o-ab.FirstOffset]
}

// Acknowledge applies member's acknowledgements for this partition, all or
// nothing (share-groups.md §2.5): every batch is validated against the
// current state before anything changes, so a failure leaves the partition
// exactly as it was. Offsets below the SPSO are skipped, whether a batch
// straddles the SPSO or lies wholly below it (ack-below-spso).
//
// RENEW (row 6) cancels the lock and arms a new one for the full current
// lock duration from now; state, owner and delivery count stay.
func (sp *SharePartition) Acknowledge(member string, acks []AckBatch, now time.Time) error {
	if err := validateAckSyntax(acks); err != nil {
		return err
	}
	if len(acks) == 0 {
		return nil
	}
	sp.mu.Lock()
	if err := sp.validateAcksLocked(member, acks); err != nil {
		sp.mu.Unlock()
		return err
	}
	released := false
	spso := sp.spso // fixed while applying; advance runs after
	for _, ab := range acks {
		lo := max(ab.FirstOffset, spso)
		if lo > ab.LastOffset {
			continue
		}
		if len(ab.Types) == 1 {
			ev := ackEvents[ab.Types[0]]
			released = released || ev == evRelease
			sp.forRangeLocked(lo, ab.LastOffset, isAcquired, func(s slot) {
				sp.transitionLocked(s, ev, member, now)
			})
			continue
		}
		// Per-offset types force per-offset state (§1.6).
		sp.forRangeLocked(lo, ab.LastOffset, func(*rec) bool { return true }, func(s slot) {
			if s.idx < 0 {
				sp.splitLocked(s.b)
				for i := range s.b.offs {
					sp.ackOffsetLocked(slot{s.b, i}, ab, now)
				}
				return
			}
			sp.ackOffsetLocked(s, ab, now)
		})
		for _, t := range ab.Types {
			released = released || t == AckRelease
		}
	}
	before := sp.spso
	sp.advanceLocked()
	shrank := sp.spso != before
	sp.unlockAndEmit(released || shrank)
	return nil
}

func (sp *SharePartition) ackOffsetLocked(s slot, ab AckBatch, now time.Time) {
	first, _ := s.span()
	// An offset of the range not covered by this ack batch (a batch that
	// was whole and got split here) is left alone.
	if first < ab.FirstOffset || first > ab.LastOffset || first < sp.spso {
		return
	}
	sp.transitionLocked(s, ackEvents[ab.typeAt(first)], "", now)
}

func isAcquired(r *rec) bool { return r.state == Acquired }

// ErrAckBatches marks acknowledgement batches that break a request-level
// rule of share-groups.md §2.5/§2.6 (ValidateAcks). It is an
// ErrInvalidRequest; it is told apart because Kafka answers those before
// it counts the request's acknowledgements, so metrics skip them.
var ErrAckBatches error = ackBatchesError{}

type ackBatchesError struct{}

// Error is Kafka's name of the code, as the message prefix clients saw.
func (ackBatchesError) Error() string        { return "invalid request" }
func (ackBatchesError) Is(target error) bool { return target == ErrInvalidRequest }

// ValidateAcks applies the request-level rules of share-groups.md §2.5 and
// §2.6 to one partition's batches, in Kafka's order. version is the
// request's: RENEW exists from v2, and only with isRenewAck. The first
// broken rule rejects every batch of the partition with ErrAckBatches;
// Acknowledge then checks offsets and ownership against the state.
func ValidateAcks(version int16, isRenewAck bool, batches []AckBatch) error {
	maxType := AckReject
	if version >= 2 {
		maxType = AckRenew // v2+, only with IsRenewAck
	}
	for i, b := range batches {
		switch {
		case b.FirstOffset > b.LastOffset:
			return fmt.Errorf("%w: acknowledgement batch %d-%d is inverted", ErrAckBatches, b.FirstOffset, b.LastOffset)
		case i > 0 && b.FirstOffset < batches[i-1].LastOffset:
			// Kafka compares with <, so a batch may start on the previous
			// batch's last offset.
			return fmt.Errorf("%w: acknowledgement batch %d-%d overlaps the one before (ending %d)", ErrAckBatches, b.FirstOffset, b.LastOffset, batches[i-1].LastOffset)
		case len(b.Types) == 0:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has no types", ErrAckBatches, b.FirstOffset, b.LastOffset)
		case len(b.Types) > 1 && int64(len(b.Types)) != b.LastOffset-b.FirstOffset+1:
			return fmt.Errorf("%w: acknowledgement batch %d-%d has %d types; want 1 or one per offset", ErrAckBatches, b.FirstOffset, b.LastOffset, len(b.Types))
		}
		for _, t := range b.Types {
			switch {
			case t < 0 || t > maxType:
				return fmt.Errorf("%w: acknowledge type %d is not valid at v%d", ErrAckBatches, t, version)
			case t == AckRenew && !isRenewAck:
				return fmt.Errorf("%w: acknowledge type 4 (renew) needs IsRenewAck", ErrAckBatches)
			}
		}
	}
	return nil
}

// validateAckSyntax checks what needs no state for a caller that did not
// run ValidateAcks with its request's version: every type this package
// knows is allowed.
func validateAckSyntax(acks []AckBatch) error {
	return ValidateAcks(2, true, acks)
}

// validateAcksLocked checks every batch against the current state, in
// order, as if the earlier batches had been applied. The only way an
// earlier batch can affect a later one is the shared offset when a batch
// starts on the previous batch's last offset: after anything but RENEW that
// offset is no longer ACQUIRED.
func (sp *SharePartition) validateAcksLocked(member string, acks []AckBatch) error {
	for i, ab := range acks {
		for _, t := range ab.Types {
			if t == AckRenew && !sp.cfg.RenewEnabled {
				return fmt.Errorf("%w: renew acknowledgements are disabled", ErrInvalidRecordState)
			}
		}
		if ab.LastOffset < sp.spso {
			// ack-below-spso: nothing there can change any more (Kafka's
			// SharePartition.acknowledge skips such a batch as already
			// archived before it looks anything up), so it succeeds.
			continue
		}
		if sp.spso == sp.end {
			return fmt.Errorf("%w: no records in flight", ErrInvalidRecordState)
		}
		lo := max(ab.FirstOffset, sp.spso)
		if lo >= sp.end || ab.LastOffset >= sp.end {
			return fmt.Errorf("%w: [%d,%d] goes beyond the last in-flight offset %d", ErrInvalidRequest, ab.FirstOffset, ab.LastOffset, sp.end-1)
		}
		if i > 0 && ab.FirstOffset == acks[i-1].LastOffset && lo == ab.FirstOffset {
			prev := acks[i-1]
			if prev.typeAt(prev.LastOffset) != AckRenew {
				return fmt.Errorf("%w: offset %d acknowledged twice", ErrInvalidRecordState, ab.FirstOffset)
			}
		}
		for j := sp.searchLocked(lo); j < len(sp.batches); j++ {
			b := sp.batches[j]
			if b.first > ab.LastOffset {
				break
			}
			if b.offs == nil {
				if b.state != Acquired || b.owner != member {
					return sp.notAcquiredErr(max(lo, b.first), &b.rec, member)
				}
				continue
			}
			for o := max(lo, b.first); o <= min(ab.LastOffset, b.last); o++ {
				if r := &b.offs[o-b.first]; r.state != Acquired || r.owner != member {
					return sp.notAcquiredErr(o, r, member)
				}
			}
		}
	}
	return nil
}

func (sp *SharePartition) notAcquiredErr(o int64, r *rec, member string) error {
	if r.state == Acquired {
		return fmt.Errorf("%w: offset %d is acquired by another member, not %q", ErrInvalidRecordState, o, member)
	}
	return fmt.Errorf("%w: offset %d is %v, not acquired", ErrInvalidRecordState, o, r.state)
}

// ReleaseMember releases everything member holds, as when its share session
// closes or its connection drops (row 8): each attempt counts, so records
// at the delivery count limit (or below the SPSO) are archived. why is
// ReasonSessionClosed or ReasonConnectionClosed, for the story.
func (sp *SharePartition) ReleaseMember(member string, why StoryReason, now time.Time) {
	sp.mu.Lock()
	sp.releaseReason = why
	released := false
	mine := func(r *rec) bool { return r.state == Acquired && r.owner == member }
	for _, b := range sp.batches {
		if b.offs == nil {
			if mine(&b.rec) {
				sp.transitionLocked(slot{b, -1}, evMemberGone, "", now)
				released = true
			}
			continue
		}
		for i := range b.offs {
			if mine(&b.offs[i]) {
				sp.transitionLocked(slot{b, i}, evMemberGone, "", now)
				released = true
			}
		}
	}
	sp.advanceLocked()
	sp.unlockAndEmit(released)
}

// LogStartMoved tells the partition the log start offset is now newStart
// (retention, DeleteRecords; §1.4 and row 9). The SPSO moves up to it;
// AVAILABLE records below it are archived; ACQUIRED ones stay until their
// lock expires or their owner goes (then archived), and acknowledgements
// for them are skipped.
func (sp *SharePartition) LogStartMoved(newStart int64, now time.Time) {
	sp.mu.Lock()
	if !sp.initialized || newStart <= sp.spso {
		sp.mu.Unlock()
		return
	}
	// A batch the new start cuts through is split while it is live, so the
	// offsets on either side can end differently.
	if i := sp.searchLocked(newStart); i < len(sp.batches) {
		if b := sp.batches[i]; b.first < newStart && b.offs == nil && !b.state.Terminal() {
			sp.splitLocked(b)
		}
	}
	sp.forRangeLocked(sp.spso, newStart-1, isAvailable, func(s slot) {
		sp.transitionLocked(s, evLogStart, "", now)
	})
	sp.spso = newStart
	if sp.end < sp.spso {
		sp.end = sp.spso
	}
	sp.availHint = max(sp.availHint, sp.spso)
	sp.advanceLocked()
	sp.unlockAndEmit(true)
}
