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
		digits, ok := strings.CutSuffix(n, segmentSuffix)
		if !ok || len(digits) != 20 {
			continue
		}
		if base, err := strconv.ParseInt(digits, 10, 64); err == nil && base >= 0 {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases
}

// blockBytes is how much of a segment recovery reads at a time: the
// largest chunk storage makes, so that restored partitions are held in
// chunks as large as those of a live one.
const blockBytes = 4 << 20

// scanSegment reads the batches of one segment of size bytes, in blocks
// of up to block bytes (larger for a larger batch; recovery reads
// blockBytes). It calls fn with each
// valid batch and its position, then run with the block's whole batches
// back to back (the batches fn saw are sub-slices of it); run owns the
// block from then on. With run nil, one buffer is reused for every block,
// and fn must not keep the batches it is given. It returns where the valid batches end. An invalid
// batch that is a torn tail — cut short by the end of the file, failing
// its CRC as the file's last batch, or followed by nothing but zeros — ends
// the scan with valid < size and no error, if last says this is the
// partition's last segment. Anything else invalid is ErrCorrupt naming the
// position (torn-tail, no-silent-loss). An error from fn or run is
// returned as it is.
func scanSegment(r io.ReaderAt, size int64, name string, last bool, block int, fn func(batch []byte, pos int64) error, run func(block []byte) error) (valid int64, err error) {
	pos := int64(0) // file position of the first byte not yet in a run
	torn := func(why string) (int64, error) {
		if !last {
			return pos, fmt.Errorf("%w: %s at byte %d: %s, and later segments follow", ErrCorrupt, name, pos, why)
		}
		return pos, nil
	}
	// invalid: the bytes at pos are not a batch; they are a torn tail if
	// everything from rest on is zero.
	invalid := func(rest int64, why string) (int64, error) {
		zero, err := zeroFrom(r, rest, size)
		if err != nil {
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		if zero {
			return torn(why + ", then only zeros")
		}
		return pos, fmt.Errorf("%w: %s at byte %d: %s, with data after it", ErrCorrupt, name, pos, why)
	}
	var carry []byte // bytes of an incomplete batch left from the last block
	need := int64(0) // the length of that batch, when its prefix was read
	var reuse []byte // with run nil, the buffer every block is read into
	for pos < size {
		want := min(max(int64(block), need, int64(len(carry))+1), size-pos)
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
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		off := 0
		need = 0
		// stop, once set, ends the scan at the batch at off after the
		// whole batches before it are handed to run.
		var stop func() (int64, error)
		for off < len(blk) && stop == nil {
			rest := blk[off:]
			if len(rest) < batchPrefixBytes {
				break
			}
			length := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + batchPrefixBytes
			at := pos + int64(off)
			switch {
			case length < batchMinBytes:
				stop = func() (int64, error) { return invalid(at, fmt.Sprintf("batch length %d", length)) }
				continue
			case at+length > size:
				stop = func() (int64, error) { return torn(fmt.Sprintf("batch of %d bytes cut short at %d", length, size-at)) }
				continue
			case int64(len(rest)) < length:
				need = length
			}
			if need > 0 {
				break
			}
			batch := rest[:length:length]
			if _, err := storage.ParseBatch(batch); err != nil {
				stop = func() (int64, error) { return invalid(at+length, err.Error()) }
				continue
			}
			if err := fn(batch, at); err != nil {
				return at, err
			}
			off += int(length)
		}
		carry = append([]byte(nil), blk[off:]...)
		if off > 0 && run != nil {
			if err := run(blk[:off]); err != nil {
				return pos, err
			}
		}
		pos += int64(off)
		if stop != nil {
			return stop()
		}
		if pos+int64(len(carry)) >= size && len(carry) > 0 && need == 0 {
			// What is left is shorter than a batch's length prefix.
			return torn("batch header cut short")
		}
	}
	return pos, nil
}

// zeroFrom reports whether bytes [from, size) of r are all zero: what a
// file extended but never written looks like after a power loss.
func zeroFrom(r io.ReaderAt, from, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for from < size {
		n := int(min(int64(len(buf)), size-from))
		if _, err := r.ReadAt(buf[:n], from); err != nil && err != io.EOF {
			return false, err
		}
		if !allZero(buf[:n]) {
			return false, nil
		}
		from += int64(n)
	}
	return true, nil
}

// partitionDir is where partition index of topic id keeps its segments.
func (d *Dir) partitionDir(id storage.TopicID, index int32) string {
	return filepath.Join(d.path, logsDir, topicIDString(id), strconv.Itoa(int(index)))
}
