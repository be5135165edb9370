package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch responses are almost all record bytes, and those bytes already sit
// in the partition logs. Encoding them through kmsg copies every byte into
// the response buffer (and grows it by doubling); here the record bytes are
// left where they are and the frame is returned as segments for one
// vectored write: [header and fields][records][fields][records]…[fields].
//
// minSpliceBytes is the record payload below which a copy is cheaper than
// an extra write segment.
const minSpliceBytes = 16 << 10

// RecordPieces, when not nil, gives the record bytes of partition p of
// topic t (indexes into the response's arrays) as pieces to write back to
// back, for records that lie in several places; nil means the partition's
// own records field holds them. The pieces are spliced in like that field.
type RecordPieces func(t, p int) [][]byte

// AppendFetchResponse encodes resp (version set) as a whole response frame.
// The non-record bytes are appended to dst; the result is segs, which holds
// slices of the returned dst interleaved with the partitions' RecordBatches
// (or their pieces) as given, not copied. The caller writes segs in order
// and must not modify the record slices until the write is done.
//
// ok is false when resp sets something this encoder does not write — any
// tagged field (diverging epoch, current leader, snapshot ID, node
// endpoints, unknown tags) — or carries too few record bytes to be worth
// splicing; encode it with AppendResponse instead.
func AppendFetchResponse(dst []byte, segs [][]byte, correlationID int32, resp *kmsg.FetchResponse, pieces RecordPieces) (out []byte, outSegs [][]byte, ok bool) {
	out, outSegs, _, ok = appendFetchResponse(dst, segs, correlationID, resp, pieces, nil)
	return out, outSegs, ok
}

// appendFetchResponse is AppendFetchResponse where sources, when not nil,
// gives the partitions whose records a source writes (FetchResponse.
// AppendFrame).
func appendFetchResponse(dst []byte, segs [][]byte, correlationID int32, resp *kmsg.FetchResponse, pieces RecordPieces, sources func(t, p int) RecordSource) (out []byte, outSegs [][]byte, srcs []RecordSource, ok bool) {
	if !spliceable(resp) {
		return dst, segs, nil, false
	}
	v := resp.Version
	flexible := v >= 12
	sp := newSplicer(dst, correlationID, flexible)
	sp.sources = sources
	if v >= 1 {
		sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(resp.ThrottleMillis))
	}
	if v >= 7 {
		sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(resp.ErrorCode))
		sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(resp.SessionID))
	}
	sp.dst = appendArrayLen(sp.dst, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v >= 13 {
			sp.dst = append(sp.dst, t.TopicID[:]...)
		} else {
			sp.dst = appendString(sp.dst, t.Topic, flexible)
		}
		sp.dst = appendArrayLen(sp.dst, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(p.Partition))
			sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(p.ErrorCode))
			sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(p.HighWatermark))
			sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(p.LastStableOffset))
			if v >= 5 {
				sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(p.LogStartOffset))
			}
			sp.dst = appendNullableArrayLen(sp.dst, len(p.AbortedTransactions), p.AbortedTransactions == nil, flexible)
			for _, a := range p.AbortedTransactions {
				sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(a.ProducerID))
				sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(a.FirstOffset))
				if flexible {
					sp.dst = append(sp.dst, 0)
				}
			}
			if v >= 11 {
				sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(p.PreferredReadReplica))
			}
			sp.records(p.RecordBatches, pieces, i, j)
			if flexible {
				sp.dst = append(sp.dst, 0) // partition tags
			}
		}
		if flexible {
			sp.dst = append(sp.dst, 0) // topic tags
		}
	}
	if flexible {
		sp.dst = append(sp.dst, 0) // response tags
	}
	return sp.finishSources(segs)
}

// splicer builds a response frame whose record bytes stay where they are:
// every other byte is appended to dst, and each non-empty record field is
// remembered as a splice point. The offsets are resolved only at the end,
// because dst may move while it grows.
type splicer struct {
	dst         []byte
	start       int
	flexible    bool
	splices     []splice
	recordBytes int
	// sources, when not nil, gives the partitions whose records a source
	// writes; they win over pieces and the records field.
	sources func(t, p int) RecordSource
}

// splice is record bytes to write at offset at of dst: records, or what
// src writes.
type splice struct {
	at      int
	records []byte
	src     RecordSource
}

// newSplicer starts a frame: size (filled in by finish), correlation ID,
// and the header's empty tag section for flexible responses.
func newSplicer(dst []byte, correlationID int32, flexible bool) *splicer {
	sp := &splicer{dst: dst, start: len(dst), flexible: flexible}
	sp.dst = append(sp.dst, 0, 0, 0, 0)
	sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(correlationID))
	if flexible {
		sp.dst = append(sp.dst, 0)
	}
	return sp
}

// records writes the nullable bytes field of partition p of topic t: its
// length, then its bytes spliced in, taken from pieces when that has them
// for the partition and from b otherwise.
func (sp *splicer) records(b []byte, pieces RecordPieces, t, p int) {
	if sp.sources != nil {
		if src := sp.sources(t, p); src != nil {
			sp.dst = appendNullableBytesLen(sp.dst, src.Len(), false, sp.flexible)
			if src.Len() > 0 {
				sp.splices = append(sp.splices, splice{at: len(sp.dst), src: src})
				sp.recordBytes += src.Len()
			}
			return
		}
	}
	var split [][]byte
	if pieces != nil {
		split = pieces(t, p)
	}
	if split == nil {
		sp.dst = appendNullableBytesLen(sp.dst, len(b), b == nil, sp.flexible)
		sp.splice(b)
		return
	}
	n := 0
	for _, piece := range split {
		n += len(piece)
	}
	sp.dst = appendNullableBytesLen(sp.dst, n, false, sp.flexible)
	for _, piece := range split {
		sp.splice(piece)
	}
}

// splice remembers b as record bytes to write at the current end of dst.
func (sp *splicer) splice(b []byte) {
	if len(b) > 0 {
		sp.splices = append(sp.splices, splice{at: len(sp.dst), records: b})
		sp.recordBytes += len(b)
	}
}

// finish fills in the frame size and cuts the segments. It declines (ok
// false, dst as it was) when the records are too few to be worth a
// vectored write.
func (sp *splicer) finish(segs [][]byte) ([]byte, [][]byte, bool) {
	dst, segs, _, ok := sp.finishSources(segs)
	return dst, segs, ok
}

// finishSources is finish for a frame that may have sources: each leaves
// a nil segment, and srcs lists them in order.
func (sp *splicer) finishSources(segs [][]byte) ([]byte, [][]byte, []RecordSource, bool) {
	if sp.recordBytes < minSpliceBytes {
		return sp.dst[:sp.start], segs, nil, false
	}
	binary.BigEndian.PutUint32(sp.dst[sp.start:], uint32(len(sp.dst)-sp.start-4+sp.recordBytes))
	var srcs []RecordSource
	prev := sp.start
	for _, s := range sp.splices {
		if s.at > prev { // pieces of one field follow each other directly
			segs = append(segs, sp.dst[prev:s.at])
		}
		if s.src != nil {
			segs = append(segs, nil)
			srcs = append(srcs, s.src)
		} else {
			segs = append(segs, s.records)
		}
		prev = s.at
	}
	segs = append(segs, sp.dst[prev:])
	return sp.dst, segs, srcs, true
}

// spliceable reports whether resp sets nothing but the fields
// AppendFetchResponse writes.
func spliceable(resp *kmsg.FetchResponse) bool {
	if resp.Version < 4 || len(resp.Brokers) > 0 || resp.UnknownTags.Len() > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 ||
				p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
			for _, a := range p.AbortedTransactions {
				if a.UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}

// Kafka's length encodings: classic versions use fixed-width signed lengths
// (-1 for null), flexible versions an unsigned varint of length+1 (0 for
// null).

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendNullableArrayLen(dst []byte, n int, null, flexible bool) []byte {
	if null {
		if flexible {
			return append(dst, 0)
		}
		return binary.BigEndian.AppendUint32(dst, 0xffffffff)
	}
	return appendArrayLen(dst, n, flexible)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}

func appendNullableBytesLen(dst []byte, n int, null, flexible bool) []byte {
	switch {
	case null && flexible:
		return append(dst, 0)
	case null:
		return binary.BigEndian.AppendUint32(dst, 0xffffffff)
	case flexible:
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendNullableString(dst []byte, s *string, flexible bool) []byte {
	if s == nil {
		if flexible {
			return append(dst, 0)
		}
		return binary.BigEndian.AppendUint16(dst, 0xffff)
	}
	return appendString(dst, *s, flexible)
}
