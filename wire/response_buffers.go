package wire

import "sync/atomic"

// A connection keeps only a small buffer for its answers (an idle
// connection should not hold megabytes), so every answer bigger than that
// (Metadata of 20,000 topics is 1.3 MB) used to grow a new buffer from
// nothing, and append grows large slices by a quarter at a time: some
// 5 MB of fresh memory and 4 MB copied for each 1.3 MB answer. That made
// the answer's cost per topic more than double from 10,000 topics to
// 20,000 (issue 22).
//
// So the process keeps one spare large buffer, the last one returned, for
// the next large answer of any connection. One, not a sync.Pool: the
// garbage collector empties a pool every other cycle, and a broker
// answering large requests allocates enough to run a cycle per request,
// so a pool was empty when asked. What it holds is bounded by
// MaxSpareResponseBuffer.

// MaxSpareResponseBuffer is the largest buffer ReturnResponseBuffer keeps.
const MaxSpareResponseBuffer = 8 << 20

var spareResponseBuffer atomic.Pointer[[]byte]

// TakeResponseBuffer returns the spare buffer, emptied, or nil when
// another answer has it or none was returned.
func TakeResponseBuffer() []byte {
	p := spareResponseBuffer.Swap(nil)
	if p == nil {
		return nil
	}
	return (*p)[:0]
}

// ReturnResponseBuffer makes buf, written out and no longer used, the
// spare for the next TakeResponseBuffer, unless it is over
// MaxSpareResponseBuffer. A spare it replaces is left to the garbage
// collector.
func ReturnResponseBuffer(buf []byte) {
	if cap(buf) == 0 || cap(buf) > MaxSpareResponseBuffer {
		return
	}
	spareResponseBuffer.Store(&buf)
}
