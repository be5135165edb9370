package sharepartition

// Dead letters (KIP-1191, share-groups.md §10). A record archived because
// its member rejected it, or because an attempt ended at the delivery count
// limit, is a dead letter; a record archived for any other reason (the log
// start moved past it, its batch vanished, its transaction aborted, a GAP)
// is not. The partition only reports dead letters; writing them to a topic
// is the broker's business.

// DeadLetterReason says why records became dead letters.
type DeadLetterReason uint8

const (
	// DeadLetterRejected: a REJECT acknowledgement.
	DeadLetterRejected DeadLetterReason = iota + 1
	// DeadLetterDeliveryLimit: a release, lock expiry or session close
	// ended an attempt at the delivery count limit.
	DeadLetterDeliveryLimit
)

// DeadLetter is a run of offsets archived together for one reason, with
// the delivery count they had (a whole batch shares one count).
type DeadLetter struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
	Reason                  DeadLetterReason
}

// noteDeadLocked queues a dead letter for OnDeadLetter. Without a hook it
// costs one nil check, so a group with no dead-letter queue pays nothing.
func (sp *SharePartition) noteDeadLocked(first, last int64, count int16, why DeadLetterReason) {
	if sp.cfg.OnDeadLetter == nil {
		return
	}
	// A split batch archives offset by offset; neighbours with the same
	// count and reason are one run.
	if n := len(sp.dead); n > 0 {
		if d := &sp.dead[n-1]; d.LastOffset+1 == first && d.DeliveryCount == count && d.Reason == why {
			d.LastOffset = last
			return
		}
	}
	sp.dead = append(sp.dead, DeadLetter{FirstOffset: first, LastOffset: last, DeliveryCount: count, Reason: why})
}

// takeDeadLocked hands the queued dead letters to the caller, who calls
// reportDead with them once the partition lock is released. Each archive
// is queued exactly once (ARCHIVED is terminal), so each dead letter is
// reported exactly once, and always after the state change that made it.
func (sp *SharePartition) takeDeadLocked() ([]DeadLetter, func([]DeadLetter)) {
	if len(sp.dead) == 0 {
		return nil, nil
	}
	dead := sp.dead
	sp.dead = nil
	return dead, sp.cfg.OnDeadLetter
}

func reportDead(dead []DeadLetter, hook func([]DeadLetter)) {
	if hook != nil && len(dead) > 0 {
		hook(dead)
	}
}
