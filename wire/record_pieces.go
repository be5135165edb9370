package wire

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch and ShareFetch answers carry record bytes straight from the logs. A
// read that crosses storage chunks comes back as several pieces, and kmsg
// has one []byte field for a partition's records. Rather than join the
// pieces (a copy of up to a partition's fetch size), an answer
// (FetchResponse, ShareFetchResponse) keeps them beside its kmsg response;
// AppendFetchResponse and AppendShareFetchResponse splice them into a
// vectored write (RecordPieces), and anything that encodes the answer
// through kmsg gets them joined first.

// splitRecords holds the records of an answer's partitions that lie in more
// than one piece, by the partitions' indexes in the response. Invariant: a
// partition listed here has no bytes in its kmsg records field until join
// moves its pieces there; the pieces win over that field in a vectored
// write.
type splitRecords struct {
	split []splitPartition
}

type splitPartition struct {
	topic, partition int
	records          [][]byte
}

// Field returns what the kmsg records field of partition p of topic t
// holds for records: its one piece, or nil for none, or nil while its
// pieces are kept here. Either nil becomes an empty record set when the
// answer is sent (emptyRecordSets).
func (s *splitRecords) Field(t, p int, records [][]byte) []byte {
	switch len(records) {
	case 0:
		return nil
	case 1:
		return records[0]
	}
	s.split = append(s.split, splitPartition{topic: t, partition: p, records: records})
	return nil
}

// pieces is a wire.RecordPieces over the split partitions. An answer has
// few of them (only reads that crossed a chunk boundary), so a scan is
// cheaper than a map.
func (s *splitRecords) pieces(t, p int) [][]byte {
	for _, sp := range s.split {
		if sp.topic == t && sp.partition == p {
			return sp.records
		}
	}
	return nil
}

// RecordPieces returns pieces as a RecordPieces, or nil when no
// partition is split (the common case, and no closure to allocate).
func (s *splitRecords) RecordPieces() RecordPieces {
	if len(s.split) == 0 {
		return nil
	}
	return s.pieces
}

// join hands every split partition's records, joined, to set, and forgets
// the pieces.
func (s *splitRecords) join(set func(t, p int, records []byte)) {
	for _, sp := range s.split {
		set(sp.topic, sp.partition, bytes.Join(sp.records, nil))
	}
	s.split = nil
}

// FetchResponse is a Fetch answer whose records may be split.
type FetchResponse struct {
	kmsg.FetchResponse
	splitRecords
}

// AppendTo encodes the answer through kmsg, its split records joined.
func (r *FetchResponse) AppendTo(dst []byte) []byte {
	r.join(func(t, p int, records []byte) { r.Topics[t].Partitions[p].RecordBatches = records })
	return r.FetchResponse.AppendTo(dst)
}

// ShareFetchResponse is a ShareFetch answer whose records may be split.
type ShareFetchResponse struct {
	kmsg.ShareFetchResponse
	splitRecords
}

// AppendTo encodes the answer through kmsg, its split records joined.
func (r *ShareFetchResponse) AppendTo(dst []byte) []byte {
	r.join(func(t, p int, records []byte) { r.Topics[t].Partitions[p].Records = records })
	return r.ShareFetchResponse.AppendTo(dst)
}

// noRecords is the empty record set: a zero-length, non-nil field, which
// encodes as length 0 where nil would encode as null.
var noRecords = []byte{}

// EmptyFetchRecordSets and EmptyShareFetchRecordSets give every partition
// that carries no records an empty record set instead of a null one
// (empty-record-set). Kafka's broker never writes a null there, and
// librdkafka and kafka-python fail on one: librdkafka rejects the response
// as a parse failure, so a consumer never reaches the end of a partition.
// The broker applies them to every Fetch and ShareFetch answer it sends,
// whoever built it (handler or fault injection).
func EmptyFetchRecordSets(r *kmsg.FetchResponse) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			if p := &r.Topics[i].Partitions[j]; p.RecordBatches == nil {
				p.RecordBatches = noRecords
			}
		}
	}
}

func EmptyShareFetchRecordSets(r *kmsg.ShareFetchResponse) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			if p := &r.Topics[i].Partitions[j]; p.Records == nil {
				p.Records = noRecords
			}
		}
	}
}
