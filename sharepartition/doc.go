// Package sharepartition is the share-partition state machine of KIP-932:
// one SharePartition per (share group, topic, partition) holds the
// in-flight window [SPSO, end), each record's state, delivery count, owner
// and acquisition lock, and applies the transitions of share-groups.md §1.2
// through one state table (state.go). It knows no Kafka wire types and no
// error codes: the broker translates requests into the types here and maps
// the sentinel errors (ErrInvalidRecordState, ErrInvalidRequest,
// ErrNotInitialized) to codes.
//
// # API
//
//   - New(cfg, timers), SetConfig(cfg): settings that group configs may
//     change at runtime (lock duration, delivery count limit, max record
//     locks, renew enabled, isolation level), an OnChange hook called
//     without the lock when a waiting fetch may now acquire something, and
//     optional atomic Counters for metrics.
//   - InitializeIfNeeded(start): choose the SPSO on first use; the broker
//     resolves share.auto.offset.reset to start. ResetStart(offset): discard
//     everything (AlterShareGroupOffsets).
//   - NextFetchOffset, then Acquire(AcquireRequest{Member, FetchOffset,
//     Batches, MaxRecords, BatchSize, Mode}, now): the broker reads the log
//     from the next fetch offset and passes the producer batches it got;
//     Acquire returns the AcquiredRecords ranges (§2.7, throttling §1.3,
//     in-flight limit §1.5, rows 10 and 11). CanAcquire and InFlight tell a
//     long-polling fetch whether to read at all.
//   - Acknowledge(member, batches, now): §2.5 validation, all or nothing;
//     GAP, ACCEPT, RELEASE, REJECT and RENEW (row 6: new lock for the full
//     current lock duration, nothing else changes).
//   - ReleaseMember(member, why, now): share session closed or connection
//     dropped (row 8). LogStartMoved(offset, now): retention or
//     DeleteRecords (row 9, §1.4). LeaderMoved(now): leadership moved
//     (row 12).
//   - Snapshot, Batches and CheckInvariants for inspection and tests;
//     Story(offset), StoryKinds and RecentOffsets read the record stories
//     (story.go), and DeadLettered adds a dead-letter write to them.
//
// # Memory and locks
//
// The window is a slice of in-flight batches, each with one batch-wide
// state and one lock, aligned to the ranges handed out. A batch is split
// into per-offset state (never merged back) only when §1.6 says so: a
// partial or per-offset acknowledgement, a partial acquisition (record-limit
// mode, throttling, the in-flight limit inside the window), or the log
// start cutting through a live batch. A split ACQUIRED batch gives each
// offset its own lock with the batch's deadline.
//
// Locks are locktimer.Service timers. Each armed lock carries a generation;
// the expiry callback takes the partition mutex and acts only if the
// record (or unsplit batch) is still ACQUIRED under that generation, so a
// fire that lost a race with an acknowledgement, a renewal or a split does
// nothing.
//
// # Concurrency
//
// Every exported method takes the partition mutex for one change and never
// calls out while holding it, except into the timer service (lock order:
// share partition, then timer service). OnChange runs after unlocking, on
// the caller's goroutine or the timer's.
//
// # Decisions where share-groups.md leaves room
//
//   - Control batches are acquired like data and acknowledged by clients as
//     GAP (§6); LogBatch.Control is informational.
//   - Offsets between the window end and the first batch a read returns
//     (compaction) are recorded as one ARCHIVED batch when the window is not
//     empty, and skipped by moving the SPSO when it is, so the window stays
//     contiguous.
//   - Acknowledgements are validated completely before anything is applied,
//     so nothing needs rolling back. Two batches may share an offset (Kafka
//     compares with <); the second fails unless the first was a RENEW.
//   - ACQUIRED records left below the SPSO by a log start move stay ACQUIRED
//     until their lock expires or their owner goes (then ARCHIVED);
//     acknowledgements skip them.
//   - A limit lowered while records are AVAILABLE does not archive them; the
//     next attempt may exceed the new limit and archives when it ends.
//     Throttling treats count >= limit-1 as the last attempt.
//   - Acquire trusts AcquireRequest.FetchOffset to be where the broker's
//     read began: AVAILABLE offsets from there up to the first batch read
//     are archived as vanished (row 10).
//
// # Known limits
//
//   - A split ACQUIRED batch costs two allocations per offset (timer handle
//     and callback), about 130 bytes per record; one timer per batch with
//     per-offset generations would cut that.
//   - Row 10 is applied only to the gap before the first batch read, as
//     Kafka does; holes further into a read are acquired and left to the
//     client's GAP acknowledgement.
package sharepartition
