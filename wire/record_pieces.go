package wire

import (
	"bytes"
	"io"

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
	// src, when not nil, writes the partition's records instead (Source).
	src RecordSource
}

// RecordSource is a partition's record bytes that are not in memory when
// the answer is encoded: they stay in a data directory's segment files and
// the source writes them itself when the frame goes out (storage.Stream,
// docs/log.md fetch-from-files), so a large answer to a slow client holds
// no copy of them.
type RecordSource interface {
	io.WriterTo
	// Len is how many bytes WriteTo writes.
	Len() int
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

// Source records src as the records of partition p of topic t and returns
// what the kmsg records field holds meanwhile: nil, which becomes an empty
// record set when the answer is sent (emptyRecordSets), and which src
// wins over in AppendFrame.
func (s *splitRecords) Source(t, p int, src RecordSource) []byte {
	s.split = append(s.split, splitPartition{topic: t, partition: p, src: src})
	return nil
}

// source returns the RecordSource of partition p of topic t, or nil.
func (s *splitRecords) source(t, p int) RecordSource {
	for _, sp := range s.split {
		if sp.topic == t && sp.partition == p {
			return sp.src
		}
	}
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
// the pieces. A source's records are read into memory: this is the
// encoding for answers the splicer cannot write, which are rare (see
// AppendFetchResponse) or small. A source that fails part way leaves
// what it wrote: whole batches and at most one cut short, which clients
// drop as they drop a batch cut by a fetch's byte limit.
func (s *splitRecords) join(set func(t, p int, records []byte)) {
	for _, sp := range s.split {
		if sp.src != nil {
			var b bytes.Buffer
			b.Grow(sp.src.Len())
			sp.src.WriteTo(&b)
			set(sp.topic, sp.partition, b.Bytes())
			continue
		}
		set(sp.topic, sp.partition, bytes.Join(sp.records, nil))
	}
	s.split = nil
}

// AppendFrame is AppendFetchResponse for r with its split records: pieces
// go out as they are, and the bytes of each partition whose records a
// source writes are left out. Where they belong, segs holds a nil segment,
// and srcs lists the sources in the order of those nil segments: the
// caller writes the segments in order and, for each nil one, the next
// source's bytes.
func (r *FetchResponse) AppendFrame(dst []byte, segs [][]byte, correlationID int32) (out []byte, outSegs [][]byte, srcs []RecordSource, ok bool) {
	var sources func(t, p int) RecordSource
	if len(r.split) > 0 {
		sources = r.source
	}
	return appendFetchResponse(dst, segs, correlationID, &r.FetchResponse, r.RecordPieces(), sources)
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
