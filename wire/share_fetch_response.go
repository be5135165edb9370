package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendShareFetchResponse is AppendFetchResponse for ShareFetch (v1+,
// always flexible): the acquired records (a partition's Records, or its
// pieces) go out by reference, the rest is
// appended to dst. ok is false when resp sets something this encoder does
// not write (unknown tags) or carries too few record bytes; encode it with
// AppendResponse then.
func AppendShareFetchResponse(dst []byte, segs [][]byte, correlationID int32, resp *kmsg.ShareFetchResponse, pieces RecordPieces) (out []byte, outSegs [][]byte, ok bool) {
	if !shareSpliceable(resp) {
		return dst, segs, false
	}
	sp := newSplicer(dst, correlationID, true)
	sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(resp.ThrottleMillis))
	sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(resp.ErrorCode))
	sp.dst = appendNullableString(sp.dst, resp.ErrorMessage, true)
	if resp.Version >= 1 {
		sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(resp.AcquisitionLockTimeoutMillis))
	}
	sp.dst = appendArrayLen(sp.dst, len(resp.Topics), true)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		sp.dst = append(sp.dst, t.TopicID[:]...)
		sp.dst = appendArrayLen(sp.dst, len(t.Partitions), true)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(p.Partition))
			sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(p.ErrorCode))
			sp.dst = appendNullableString(sp.dst, p.ErrorMessage, true)
			sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(p.AcknowledgeErrorCode))
			sp.dst = appendNullableString(sp.dst, p.AcknowledgeErrorMessage, true)
			sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(p.CurrentLeader.LeaderID))
			sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(p.CurrentLeader.LeaderEpoch))
			sp.dst = append(sp.dst, 0) // current leader tags
			sp.records(p.Records, pieces, i, j)
			sp.dst = appendArrayLen(sp.dst, len(p.AcquiredRecords), true)
			for _, a := range p.AcquiredRecords {
				sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(a.FirstOffset))
				sp.dst = binary.BigEndian.AppendUint64(sp.dst, uint64(a.LastOffset))
				sp.dst = binary.BigEndian.AppendUint16(sp.dst, uint16(a.DeliveryCount))
				sp.dst = append(sp.dst, 0)
			}
			sp.dst = append(sp.dst, 0) // partition tags
		}
		sp.dst = append(sp.dst, 0) // topic tags
	}
	sp.dst = appendArrayLen(sp.dst, len(resp.NodeEndpoints), true)
	for _, n := range resp.NodeEndpoints {
		sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(n.NodeID))
		sp.dst = appendString(sp.dst, n.Host, true)
		sp.dst = binary.BigEndian.AppendUint32(sp.dst, uint32(n.Port))
		sp.dst = appendNullableString(sp.dst, n.Rack, true)
		sp.dst = append(sp.dst, 0)
	}
	sp.dst = append(sp.dst, 0) // response tags
	return sp.finish(segs)
}

// shareSpliceable reports whether resp sets no tagged field, which is all
// AppendShareFetchResponse cannot write.
func shareSpliceable(resp *kmsg.ShareFetchResponse) bool {
	if resp.Version < 1 || resp.UnknownTags.Len() > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 || p.CurrentLeader.UnknownTags.Len() > 0 {
				return false
			}
			for _, a := range p.AcquiredRecords {
				if a.UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	for _, n := range resp.NodeEndpoints {
		if n.UnknownTags.Len() > 0 {
			return false
		}
	}
	return true
}
