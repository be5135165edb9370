package httpapi

// One topic and its records for the console's topic view: GET
// /v1/topics/{topic} (each partition's bounds, leader and epoch) and GET
// /v1/topics/{topic}/partitions/{p}/records (a page of records, read
// through storage's own batch decoding).

import (
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sharebroker/sharebroker/storage"
)

// Record pages are bounded (**record-page-bounds**): at most
// maxRecordPage records (defaultRecordPage when max is not given), and
// records stop being added once the page holds recordPageBytes of keys,
// values and headers, so one request cannot make the broker decode and
// encode a whole log. A page always holds at least one record when one
// exists at the offset, however large it is.
const (
	defaultRecordPage = 50
	maxRecordPage     = 500
	recordPageBytes   = 1 << 20
)

// TopicDetailJSON is GET /v1/topics/{topic}.
type TopicDetailJSON struct {
	Name       string               `json:"name"`
	ID         string               `json:"id"`
	Partitions []TopicPartitionJSON `json:"partitions"`
	Configs    map[string]string    `json:"configs,omitempty"` // overrides only
}

// TopicPartitionJSON is one partition: its offsets, leader and leader
// epoch.
type TopicPartitionJSON struct {
	Partition        int32 `json:"partition"`
	LogStartOffset   int64 `json:"log_start_offset"`
	HighWatermark    int64 `json:"high_watermark"`
	LastStableOffset int64 `json:"last_stable_offset"`
	Leader           int32 `json:"leader"`
	LeaderEpoch      int32 `json:"leader_epoch"`
}

// topicNamed is the topic called name, nil when there is none.
func topicNamed(s State, name string) *storage.Topic {
	for _, t := range s.Topics() {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func serveTopic(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("topic")
		t := topicNamed(s, name)
		if t == nil {
			writeError(w, http.StatusNotFound, "topic %q not found", name)
			return
		}
		leaders := map[int32]LeadershipJSON{}
		for _, l := range s.Cluster().Partitions {
			if l.Topic == name {
				leaders[l.Partition] = l
			}
		}
		out := TopicDetailJSON{Name: t.Name, ID: topicIDString(t.ID), Configs: t.Configs(), Partitions: []TopicPartitionJSON{}}
		for _, p := range t.Partitions() {
			offs := p.Offsets()
			l := leaders[p.Index]
			out.Partitions = append(out.Partitions, TopicPartitionJSON{Partition: p.Index, LogStartOffset: offs.LogStart,
				HighWatermark: offs.HighWatermark, LastStableOffset: offs.LastStable, Leader: l.Leader, LeaderEpoch: l.LeaderEpoch})
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// RecordsJSON is GET /v1/topics/{topic}/partitions/{p}/records: the
// records from Offset (the asked offset, raised to the log start), and
// NextOffset, where the next page starts.
type RecordsJSON struct {
	Topic          string       `json:"topic"`
	Partition      int32        `json:"partition"`
	LogStartOffset int64        `json:"log_start_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	Offset         int64        `json:"offset"`
	NextOffset     int64        `json:"next_offset"`
	Records        []RecordJSON `json:"records"`
}

// RecordJSON is one record. Key and Value are base64 (encoding/json's
// form of bytes; null for a null key or value); KeyText and ValueText are the same bytes as a string
// when they are valid UTF-8, absent otherwise.
type RecordJSON struct {
	Offset      int64        `json:"offset"`
	Timestamp   string       `json:"timestamp"` // RFC 3339, from the record's Unix ms
	TimestampMs int64        `json:"timestamp_ms"`
	Key         []byte       `json:"key"`
	KeyText     *string      `json:"key_text,omitempty"`
	Value       []byte       `json:"value"`
	ValueText   *string      `json:"value_text,omitempty"`
	Headers     []HeaderJSON `json:"headers"`
}

// HeaderJSON is one record header; Value as in RecordJSON.
type HeaderJSON struct {
	Key       string  `json:"key"`
	Value     []byte  `json:"value"`
	ValueText *string `json:"value_text,omitempty"`
}

func textOf(b []byte) *string {
	if b == nil || !utf8.Valid(b) {
		return nil
	}
	s := string(b)
	return &s
}

// serveRecords answers a page of records (record-page-bounds). Control
// records (transaction markers) are not records a client reads and are
// left out, as are offsets compacted or deleted away; records of open or
// aborted transactions are shown as stored.
func serveRecords(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("topic")
		t := topicNamed(s, name)
		index, err := strconv.ParseInt(r.PathValue("p"), 10, 32)
		if err != nil || index < 0 {
			writeError(w, http.StatusBadRequest, "partition %q: want a partition index, 0 or more", r.PathValue("p"))
			return
		}
		var p *storage.Partition
		if t != nil {
			p = t.Partition(int32(index))
		}
		if p == nil {
			writeError(w, http.StatusNotFound, "partition %s-%d not found", name, index)
			return
		}
		q := r.URL.Query()
		offset, limit := int64(-1), int64(defaultRecordPage)
		if v := q.Get("offset"); v != "" {
			if offset, err = strconv.ParseInt(v, 10, 64); err != nil || offset < 0 {
				writeError(w, http.StatusBadRequest, "offset %q: want an offset, 0 or more", v)
				return
			}
		}
		if v := q.Get("max"); v != "" {
			if limit, err = strconv.ParseInt(v, 10, 64); err != nil || limit < 1 || limit > maxRecordPage {
				writeError(w, http.StatusBadRequest, "max %q: want 1 to %d records", v, maxRecordPage)
				return
			}
		}
		offs := p.Offsets()
		if offset < 0 { // not given: the last page
			offset = offs.HighWatermark - limit
		}
		offset = max(offset, offs.LogStart)
		out := RecordsJSON{Topic: name, Partition: int32(index), LogStartOffset: offs.LogStart,
			HighWatermark: offs.HighWatermark, Offset: offset, Records: []RecordJSON{}}
		last := min(offset+limit, offs.HighWatermark) - 1
		out.NextOffset = max(last+1, offset)
		if last >= offset {
			recs, err := p.RecordsIn(offset, last)
			if err != nil && len(recs) == 0 {
				writeError(w, http.StatusInternalServerError, "reading %s-%d at %d: %v", name, index, offset, err)
				return
			}
			size := 0
			for _, rec := range recs {
				if size >= recordPageBytes {
					out.NextOffset = rec.Offset
					break
				}
				rj := RecordJSON{Offset: rec.Offset, TimestampMs: rec.Timestamp,
					Timestamp: time.UnixMilli(rec.Timestamp).UTC().Format(time.RFC3339Nano),
					Key:       rec.Key, KeyText: textOf(rec.Key), Value: rec.Value, ValueText: textOf(rec.Value),
					Headers: make([]HeaderJSON, 0, len(rec.Headers))}
				size += len(rec.Key) + len(rec.Value)
				for _, h := range rec.Headers {
					rj.Headers = append(rj.Headers, HeaderJSON{Key: h.Key, Value: h.Value, ValueText: textOf(h.Value)})
					size += len(h.Key) + len(h.Value)
				}
				out.Records = append(out.Records, rj)
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
}
