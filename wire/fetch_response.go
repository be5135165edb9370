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

// AppendFetchResponse encodes resp (version set) as a whole response frame.
// The non-record bytes are appended to dst; the result is segs, which holds
// slices of the returned dst interleaved with the partitions' RecordBatches
// as given (not copied). The caller writes segs in order and must not modify
// the record slices until the write is done.
//
// ok is false when resp sets something this encoder does not write — any
// tagged field (diverging epoch, current leader, snapshot ID, node
// endpoints, unknown tags) — or carries too few record bytes to be worth
// splicing; encode it with AppendResponse instead.
func AppendFetchResponse(dst []byte, segs [][]byte, correlationID int32, resp *kmsg.FetchResponse) (out []byte, outSegs [][]byte, ok bool) {
	if !spliceable(resp) {
		return dst, segs, false
	}
	v := resp.Version
	flexible := v >= 12
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // frame size, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0) // response header tags
	}
	if v >= 1 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(resp.ThrottleMillis))
	}
	if v >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(resp.ErrorCode))
		dst = binary.BigEndian.AppendUint32(dst, uint32(resp.SessionID))
	}
	// Offsets into dst where each spliced record slice goes; the slices
	// of dst are cut only at the end, because dst may move while it grows.
	type splice struct {
		at      int
		records []byte
	}
	var splices []splice
	recordBytes := 0
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v >= 13 {
			dst = append(dst, t.TopicID[:]...)
		} else {
			dst = appendString(dst, t.Topic, flexible)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.ErrorCode))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset))
			if v >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			dst = appendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil, flexible)
			for _, a := range p.AbortedTransactions {
				dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
				dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
				if flexible {
					dst = append(dst, 0)
				}
			}
			if v >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(p.PreferredReadReplica))
			}
			dst = appendNullableBytesLen(dst, len(p.RecordBatches), p.RecordBatches == nil, flexible)
			if len(p.RecordBatches) > 0 {
				splices = append(splices, splice{at: len(dst), records: p.RecordBatches})
				recordBytes += len(p.RecordBatches)
			}
			if flexible {
				dst = append(dst, 0) // partition tags
			}
		}
		if flexible {
			dst = append(dst, 0) // topic tags
		}
	}
	if flexible {
		dst = append(dst, 0) // response tags
	}
	if recordBytes < minSpliceBytes {
		return dst[:start], segs, false
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+recordBytes))
	prev := start
	for _, s := range splices {
		segs = append(segs, dst[prev:s.at], s.records)
		prev = s.at
	}
	segs = append(segs, dst[prev:])
	return dst, segs, true
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
