package durable

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebroker/sharebroker/storage"
)

// A segment file holds record batches back to back, exactly as stored
// (same-bytes), and is named by the base offset of its first batch.

const (
	segmentSuffix = ".log"
	// batchPrefixBytes are the base offset and length before the rest of
	// a batch; batchMinBytes is the smallest whole batch (its header).
	batchPrefixBytes = 12
	batchMinBytes    = 61
)

func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segmentSuffix) }

// segmentBases lists the base offsets of the segment files in dir, in
// order, ignoring other files.
func segmentBases(names []string) []int64 {
	var bases []int64
	for _, n := range names {
		if base, ok := segmentBase(n); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases
}

// segmentBase is the base offset a segment file's name says, if it is
// one's.
func segmentBase(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// blockBytes is how much of a segment recovery reads at a time: the
// largest chunk storage makes, so that restored partitions are held in
// chunks as large as those of a live one.
const blockBytes = 4 << 20

// segmentScan is one segment file to read back.
type segmentScan struct {
	r    io.ReaderAt
	size int64
	name string
	// base is the offset its first batch must have: its name's.
	base int64
	// last says whether it is its partition's last segment, the one file
	// of the partition a torn tail may end (tail.go).
	last bool
	// maxBatch is the largest batch one write can carry
	// (DefaultMaxBatchBytes, or the broker's socket.request.max.bytes).
	maxBatch int64
	// block is how much is read at a time (larger for a larger batch;
	// recovery reads blockBytes).
	block int
}

// scan reads the batches of the segment in blocks. It calls fn with each
// valid batch and its position, then run with the block's whole batches
// back to back (the batches fn saw are sub-slices of it); run owns the
// block from then on. With run nil, one buffer is reused for every block,
// and fn must not keep the batches it is given. It returns where the
// valid batches end. The first invalid batch ends the scan: with valid <
// size and no error when it and all after it are a torn tail, else with a
// *CorruptError naming its position (tail.go: torn-tail,
// no-silent-loss). An error from fn or run is returned as it is.
func (sc segmentScan) scan(fn func(batch []byte, pos int64) error, run func(block []byte) error) (valid int64, err error) {
	r, size := sc.r, sc.size
	maxBatch := sc.maxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatchBytes
	}
	pos := int64(0)  // file position of the first byte not yet in a run
	next := sc.base  // the offset the next batch should start at
	var carry []byte // bytes of an incomplete batch left from the last block
	need := int64(0) // the length of that batch, when its prefix was read
	var reuse []byte // with run nil, the buffer every block is read into
	for pos < size {
		want := min(max(int64(sc.block), need, int64(len(carry))+1), size-pos)
		var blk []byte
		switch {
		case run != nil:
			blk = make([]byte, want)
		case int64(cap(reuse)) >= want:
			blk = reuse[:want]
		default:
			reuse = make([]byte, want)
			blk = reuse
		}
		n := copy(blk, carry)
		if m, err := r.ReadAt(blk[n:], pos+int64(n)); err != nil && !(err == io.EOF && n+m == len(blk)) {
			return pos, fmt.Errorf("%s: %w", sc.name, err)
		}
		off := 0
		need = 0
		// bad, once set, ends the scan at the batch at off, after the
		// whole batches before it are handed to run.
		bad := ""
		for off < len(blk) && bad == "" {
			rest := blk[off:]
			if len(rest) < batchPrefixBytes {
				break
			}
			length := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + batchPrefixBytes
			at := pos + int64(off)
			switch {
			case length < batchMinBytes:
				bad = fmt.Sprintf("batch length %d", length)
				continue
			case at+length > size:
				bad = fmt.Sprintf("a batch of %d bytes cut short at %d", length, size-at)
				continue
			case int64(len(rest)) < length:
				need = length
			}
			if need > 0 {
				break
			}
			batch := rest[:length:length]
			h, err := storage.ParseBatch(batch)
			if err != nil {
				bad = err.Error()
				continue
			}
			if err := fn(batch, at); err != nil {
				return at, err
			}
			next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			off += int(length)
		}
		carry = append([]byte(nil), blk[off:]...)
		if off > 0 && run != nil {
			if err := run(blk[:off]); err != nil {
				return pos, err
			}
		}
		pos += int64(off)
		if bad == "" && pos+int64(len(carry)) >= size && len(carry) > 0 && need == 0 {
			bad = "a batch header cut short" // what is left is shorter than a length prefix
		}
		if bad != "" {
			return pos, tornSegmentTail(r, sc.name, pos, size, next, maxBatch, sc.last, bad)
		}
	}
	return pos, nil
}

// partitionDir is where partition index of topic id keeps its segments.
func (d *Dir) partitionDir(id storage.TopicID, index int32) string {
	return filepath.Join(d.path, logsDir, topicIDString(id), strconv.Itoa(int(index)))
}
