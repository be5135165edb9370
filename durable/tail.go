package durable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
)

// How recovery tells a torn tail from corruption (docs/durability.md
// torn-tail, no-silent-loss). A crash in the middle of a write(2), or a
// power cut before an fsync, can damage only what was being written last:
// the end of a partition's last segment and the end of meta.log; each
// batch and each record is one write. A power cut can also leave zeros
// from any byte on (pages of a file extended but never written). So the
// first invalid batch or record at byte P of such a file is a torn tail
// when the bytes from P to the file's zero suffix can be a prefix of the
// one write that comes next:
//
//   - there are none (all zeros from P), or fewer than a length prefix
//     are left in the file;
//   - or the header fields they hold are those of the next write: for a
//     batch the base offset after the previous batch (the bytes of it
//     there are), a length between the smallest batch and the largest
//     one write carries and magic 2; for a record a length of 1 byte to
//     16 MiB — and what the length claims reaches the zero suffix (no
//     other data after it), and no whole valid batch or record (CRC
//     matching) starts anywhere after P.
//
// Anything else is corruption, and so is every invalid batch in a segment
// that is not its partition's last: recovery refuses to start, naming the
// file and P. Kafka's LogSegment.recover truncates at the first invalid
// batch wherever it is, and LogLoader.recoverLog deletes the segments
// after it; a test broker that quietly loses acknowledged records is
// worse than one that does not start, so this stops instead and leaves
// the cut to the repair tool (repair.go), which reports it.

// CorruptError is data recovery found that is not a torn tail: the bytes
// of File from Offset on. Recover refuses the start with it and changes
// no file; Repair cuts File at Offset.
type CorruptError struct {
	File   string
	Offset int64
	Why    string
	// Dir is the data directory, when known: the message then says how
	// to repair it.
	Dir string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("%v: %s at byte %d: %s", ErrCorrupt, e.File, e.Offset, e.Why)
	if e.Dir != "" {
		msg += fmt.Sprintf("; nothing was changed. To cut the file at byte %d and keep what is cut under %s, run: sharebroker repair-data-dir %s (docs/durability.md, repair-data-dir)",
			e.Offset, filepath.Join(e.Dir, lostFoundDir), e.Dir)
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corruptAt(file string, offset int64, format string, args ...any) *CorruptError {
	return &CorruptError{File: file, Offset: offset, Why: fmt.Sprintf(format, args...)}
}

// DefaultMaxBatchBytes bounds a batch's length when telling a torn tail
// from corruption: Kafka's socket.request.max.bytes default (100 MiB), the
// largest Produce request, so the largest batch, a broker accepts.
const DefaultMaxBatchBytes = 104857600

// maxCandidates bounds how many batch- or record-like headers after a bad
// point are checked by CRC. Real data has one valid candidate (the next
// batch) or none; more means data that no crash writes, and the tail is
// taken for corruption rather than spending unbounded time on it.
const maxCandidates = 256

// scanStep is the block size of the searches below; candidates straddle
// blocks by up to a header's length.
const scanStep = 1 << 20

// findAfter looks for a whole valid batch or record starting in
// (from, to), where to ≤ size; check says whether the header-sized bytes
// at a position start a candidate worth a CRC check, and verify does that
// check. It returns the first valid one's position, or -1. An error is a
// read failure, or errTooManyCandidates.
func findAfter(r io.ReaderAt, from, to, size int64, headerBytes int, check func(hdr []byte, pos int64) bool, verify func(pos int64, hdr []byte) (bool, error)) (int64, error) {
	buf := make([]byte, scanStep+headerBytes)
	tried := 0
	for base := from + 1; base < to; base += scanStep {
		n := min(int64(len(buf)), size-base)
		if n < int64(headerBytes) {
			break
		}
		if _, err := r.ReadAt(buf[:n], base); err != nil && err != io.EOF {
			return -1, err
		}
		for i := int64(0); i < scanStep && i+int64(headerBytes) <= n && base+i < to; i++ {
			hdr := buf[i : i+int64(headerBytes)]
			if !check(hdr, base+i) {
				continue
			}
			if tried++; tried > maxCandidates {
				return -1, errTooManyCandidates
			}
			ok, err := verify(base+i, hdr)
			if err != nil {
				return -1, err
			}
			if ok {
				return base + i, nil
			}
		}
	}
	return -1, nil
}

var errTooManyCandidates = fmt.Errorf("more than %d batch- or record-like headers after it to check", maxCandidates)

// crcOf computes CRC-32C of bytes [from, to) of r in fixed steps.
func crcOf(r io.ReaderAt, from, to int64) (uint32, error) {
	h := crc32.New(castagnoli)
	buf := make([]byte, max(1, min(to-from, 64<<10))) // CopyBuffer refuses an empty one
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r, from, to-from), buf); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// Batch header positions durable reads itself (storage.ParseBatch decodes
// the rest).
const (
	batchMagicAt      = 16
	batchCRCAt        = 17
	batchAttributesAt = 21
	batchLastDeltaAt  = 23
	batchRecordsAt    = 57
)

// findBatchAfter looks for a whole batch with a matching CRC starting in
// (from, to) of a segment of size bytes whose base offset is in [lo, hi].
func findBatchAfter(r io.ReaderAt, from, to, size, lo, hi int64) (int64, error) {
	return findAfter(r, from, to, size, batchMinBytes, func(hdr []byte, pos int64) bool {
		base := int64(binary.BigEndian.Uint64(hdr))
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + batchPrefixBytes
		return base >= lo && base <= hi && hdr[batchMagicAt] == 2 && length >= batchMinBytes && pos+length <= size
	}, func(pos int64, hdr []byte) (bool, error) {
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + batchPrefixBytes
		crc, err := crcOf(r, pos+batchAttributesAt, pos+length)
		return crc == binary.BigEndian.Uint32(hdr[batchCRCAt:]), err
	})
}

// metaPayloadStart is how every metadata-log payload begins: the JSON of
// a metaRecord, whose first field is the op.
var metaPayloadStart = []byte(`{"op":"`)

// findMetaRecordAfter looks for a whole metadata-log record with a
// matching CRC starting in (from, to) of a file of size bytes.
func findMetaRecordAfter(r io.ReaderAt, from, to, size int64) (int64, error) {
	return findAfter(r, from, to, size, metaHeaderBytes+len(metaPayloadStart), func(hdr []byte, pos int64) bool {
		n := int64(binary.BigEndian.Uint32(hdr))
		return bytes.Equal(hdr[metaHeaderBytes:], metaPayloadStart) && n >= int64(len(metaPayloadStart)) &&
			n <= maxMetaRecordBytes && pos+metaHeaderBytes+n <= size
	}, func(pos int64, hdr []byte) (bool, error) {
		n := int64(binary.BigEndian.Uint32(hdr))
		crc, err := crcOf(r, pos+metaHeaderBytes, pos+metaHeaderBytes+n)
		return crc == binary.BigEndian.Uint32(hdr[4:]), err
	})
}

// tornSegmentTail decides about the bytes of a segment from at, where no
// valid batch starts; next is the offset the batch there should have. It
// returns nil when they are a torn tail, else the CorruptError saying why
// not. last says whether the segment is its partition's last. Only the
// bytes before the file's zero suffix are checked: a power cut zeroes
// whole pages from any byte on, even inside the header.
func tornSegmentTail(r io.ReaderAt, name string, at, size, next, maxBatch int64, last bool, why string) error {
	corrupt := func(format string, args ...any) error {
		return corruptAt(name, at, "%s: %s", why, fmt.Sprintf(format, args...))
	}
	if !last {
		return corrupt("later segments follow, so this is no torn tail")
	}
	if size-at < batchPrefixBytes {
		return nil // a length prefix cut short
	}
	z, err := dataEnd(r, at, size)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	have := z - at // bytes before the zeros
	if have == 0 {
		return nil
	}
	var hdr [batchMagicAt + 1]byte
	if _, err := r.ReadAt(hdr[:min(int64(len(hdr)), have)], at); err != nil && err != io.EOF {
		return fmt.Errorf("%s: %w", name, err)
	}
	want := binary.BigEndian.AppendUint64(nil, uint64(next))
	if n := min(8, have); !bytes.Equal(hdr[:n], want[:n]) {
		return corrupt("the batch's base offset %d is not %d, the offset after the previous batch", int64(binary.BigEndian.Uint64(hdr[:])), next)
	}
	end := size // what the batch claims, when its length is there to read
	if have >= batchPrefixBytes {
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + batchPrefixBytes
		if length < batchMinBytes || length > maxBatch {
			return corrupt("a batch length of %d bytes is impossible (a batch has %d to %d)", length, batchMinBytes, maxBatch)
		}
		if at+length < z {
			return corrupt("data follows the batch's end at byte %d", at+length)
		}
		end = min(at+length, size)
	}
	if have > batchMagicAt && hdr[batchMagicAt] != 2 {
		return corrupt("record batch magic %d", int8(hdr[batchMagicAt]))
	}
	// The batch claims at most what one write carries, so end-at is
	// bounded and the search with it.
	pos, err := findBatchAfter(r, at, end, size, next, next+(size-at))
	return nothingValidAfter(name, "batch", pos, err, corrupt)
}

// nothingValidAfter turns the search after a bad point into the verdict:
// a whole valid batch or record after it (pos >= 0), or too many
// candidates to check, makes the damage corruption; a read failure is
// reported as such; otherwise the tail is torn.
func nothingValidAfter(name, what string, pos int64, err error, corrupt func(string, ...any) error) error {
	switch {
	case err == errTooManyCandidates:
		return corrupt("%v", err)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case pos >= 0:
		return corrupt("a whole valid %s starts after it, at byte %d", what, pos)
	}
	return nil
}

// tornMetaTail decides about the bytes of meta.log from at, where no
// valid record starts, as tornSegmentTail does.
func tornMetaTail(r io.ReaderAt, name string, at, size int64, why string) error {
	corrupt := func(format string, args ...any) error {
		return corruptAt(name, at, "%s: %s", why, fmt.Sprintf(format, args...))
	}
	if size-at < metaHeaderBytes {
		return nil // a header cut short
	}
	z, err := dataEnd(r, at, size)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	have := z - at
	if have == 0 {
		return nil
	}
	end := size
	if have >= 4 {
		var hdr [4]byte
		if _, err := r.ReadAt(hdr[:], at); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]))
		if n == 0 || n > maxMetaRecordBytes {
			return corrupt("a record length of %d bytes is impossible (a record has 1 to %d)", n, maxMetaRecordBytes)
		}
		if at+metaHeaderBytes+n < z {
			return corrupt("data follows the record's end at byte %d", at+metaHeaderBytes+n)
		}
		end = min(at+metaHeaderBytes+n, size)
	}
	pos, err := findMetaRecordAfter(r, at, end, size)
	return nothingValidAfter(name, "record", pos, err, corrupt)
}

// dataEnd returns where the zero suffix of bytes [from, size) of r
// begins: one past its last byte that is not zero, from if none is. It
// reads backwards in fixed steps, so a zero tail of any size costs no
// memory.
func dataEnd(r io.ReaderAt, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > from; {
		n := min(int64(len(buf)), end-from)
		if _, err := r.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return end - n + i + 1, nil
			}
		}
		end -= n
	}
	return from, nil
}
