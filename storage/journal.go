package storage

// Hooks through which a data directory (package durable,
// docs/durability.md) sees every change that must outlive the process.
// Storage never touches a file itself: without a Journal the hooks are nil
// and the store behaves exactly as a memory-only one.

// Journal is told of changes to topics before they become visible; an
// error refuses the change (wrapped in ErrStorage). Its methods are called
// with the store's or the topic's lock held, so they see changes in the
// order they are made.
type Journal interface {
	TopicCreated(name string, id TopicID, partitions int32, configs map[string]string) error
	PartitionsAdded(id TopicID, total int32) error
	ConfigsSet(id TopicID, configs map[string]string) error
	TopicDeleted(id TopicID) error
	// Sink returns where partition index of topic id writes its batches.
	Sink(id TopicID, index int32) Sink
}

// Sink receives one partition's log changes. Its methods are called with
// the partition's lock held, so batches arrive in offset order; an error
// refuses the change.
type Sink interface {
	// Append writes a batch exactly as stored, before it is published.
	// records is its record count, for flush.messages.
	Append(stored []byte, baseOffset int64, records int32) error
	// LogStartMoved records the partition's new log start offset before
	// it takes effect.
	LogStartMoved(offset int64) error
}

// FileLog is a Sink whose files also serve reads. A partition whose sink
// is one keeps only an index of its batches in memory (file position,
// length, offsets, timestamp, producer): its record bytes live in the
// files and are read back with ReadAt, so retained bytes never sit in the
// Go heap (docs/durability.md: reads-from-files). Positions count bytes
// in the partition's byte stream: its segments back to back, from the
// first one the sink knew when it opened.
type FileLog interface {
	Sink
	// AppendAt is Append, returning the batch's position in the stream.
	AppendAt(stored []byte, baseOffset int64, records int32) (pos int64, err error)
	// ReadAt fills dst with the stream's bytes from pos. It may be called
	// without the partition's lock, concurrently with appends and with the
	// deletion of segments; bytes of a segment deleted meanwhile are an
	// error, never other bytes.
	ReadAt(dst []byte, pos int64) error
	// Pin returns the stream's bytes [pos, pos+n) as a Section that
	// writes exactly those bytes until it is released, even if their
	// segments are deleted meanwhile (fetch-pins-segments). Like ReadAt
	// it may be called without the partition's lock; bytes no segment
	// holds any more are an error.
	Pin(pos, n int64) (Section, error)
}

// fileLog returns s as a FileLog, or nil.
func fileLog(s Sink) FileLog {
	f, _ := s.(FileLog)
	return f
}

// SetJournal attaches j to the store and gives every existing partition
// its sink. Call it once, after restoring and before serving.
func (s *Store) SetJournal(j Journal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal = j
	for _, t := range s.byName {
		t.mu.Lock()
		t.journal = j
		for _, p := range t.partitions {
			p.mu.Lock()
			p.sink = j.Sink(t.ID, p.Index)
			p.file = fileLog(p.sink)
			p.mu.Unlock()
		}
		t.mu.Unlock()
	}
}
