package durable

import (
	"bufio"
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

// scanSegment reads the batches of one segment of size bytes, calling fn
// with each valid batch (its bytes are valid only during the call) and its
// position. It returns where the valid batches end. An invalid batch that
// is a torn tail — cut short by the end of the file, failing its CRC as
// the file's last batch, or followed by nothing but zeros — ends the scan
// with valid < size and no error, if last says this is the partition's
// last segment. Anything else invalid is ErrCorrupt naming the position
// (torn-tail, no-silent-loss). An error from fn is returned as it is.
func scanSegment(r io.ReaderAt, size int64, name string, last bool, fn func(batch []byte, pos int64) error) (valid int64, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(size+1, 1<<20)))
	var buf []byte
	pos := int64(0)
	torn := func(why string) (int64, error) {
		if !last {
			return pos, fmt.Errorf("%w: %s at byte %d: %s, and later segments follow", ErrCorrupt, name, pos, why)
		}
		return pos, nil
	}
	// invalid: the bytes from pos are not a batch; they are a torn tail
	// if everything from rest on is zero.
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
	for pos < size {
		rest := size - pos
		if rest < batchPrefixBytes {
			return torn("batch header cut short")
		}
		prefix, err := br.Peek(batchPrefixBytes)
		if err != nil {
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		length := int64(int32(binary.BigEndian.Uint32(prefix[8:]))) + batchPrefixBytes
		if length < batchMinBytes {
			return invalid(pos, fmt.Sprintf("batch length %d", length))
		}
		if length > rest {
			return torn(fmt.Sprintf("batch of %d bytes cut short at %d", length, rest))
		}
		if int64(cap(buf)) < length {
			buf = make([]byte, length)
		}
		buf = buf[:length]
		if _, err := io.ReadFull(br, buf); err != nil {
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		if _, err := storage.ParseBatch(buf); err != nil {
			return invalid(pos+length, err.Error())
		}
		if err := fn(buf, pos); err != nil {
			return pos, err
		}
		pos += length
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
