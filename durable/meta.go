package durable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/sharebroker/sharebroker/storage"
)

// The metadata log (meta.log): an append-only file of records, each a
// 4-byte big-endian payload length, the payload's CRC-32C, and a JSON
// payload (docs/durability.md, "On-disk format"). Replaying the records in
// order gives the state; a later record wins.

// Ops of the metadata log.
const (
	opTopic       = "topic"
	opPartitions  = "partitions"
	opConfigs     = "configs"
	opDelete      = "delete"
	opLogStart    = "log-start"
	opProducerIDs = "producer-ids"
	opGroupConfig = "group-config"
	opOffsets     = "group-offsets"

	opShareSnapshot = "share-snapshot"
	opShareUpdate   = "share-update"
	opShareDelete   = "share-delete"

	opSCRAM       = "scram"
	opSCRAMDelete = "scram-delete"

	opTxn            = "txn"
	opTxnDelete      = "txn-delete"
	opPendingOffsets = "txn-offsets"

	opACL       = "acl"
	opACLDelete = "acl-delete"

	opFeatures      = "features"
	opClientMetrics = "client-metrics"
)

// metaHeaderBytes is the length and CRC before each payload.
const metaHeaderBytes = 8

// maxMetaRecordBytes bounds one record: a topic's configs are small, so a
// larger length can only be a torn or corrupt header.
const maxMetaRecordBytes = 16 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metaRecord is one record's payload. Fields an op does not use are zero.
type metaRecord struct {
	Op         string            `json:"op"`
	Name       string            `json:"name,omitempty"`
	ID         string            `json:"id,omitempty"`
	Partitions int32             `json:"partitions,omitempty"`
	Partition  int32             `json:"partition,omitempty"`
	Configs    map[string]string `json:"configs,omitempty"`
	Offset     int64             `json:"offset,omitempty"`
	Next       int64             `json:"next,omitempty"`
	Group      string            `json:"group,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Offsets    []GroupOffset     `json:"offsets,omitempty"`

	StartOffset int64        `json:"start_offset,omitempty"`
	StateEpoch  int32        `json:"state_epoch,omitempty"`
	Batches     []ShareBatch `json:"batches,omitempty"`

	User       string `json:"user,omitempty"`
	Mechanism  int8   `json:"mechanism,omitempty"`
	Salt       []byte `json:"salt,omitempty"`
	StoredKey  []byte `json:"stored_key,omitempty"`
	ServerKey  []byte `json:"server_key,omitempty"`
	Iterations int32  `json:"iterations,omitempty"`

	Txn        *TxnState `json:"txn,omitempty"`
	ProducerID int64     `json:"producer_id,omitempty"`

	ACLs []ACL `json:"acls,omitempty"`

	Levels map[string]int16 `json:"levels,omitempty"`
	Epoch  int64            `json:"epoch,omitempty"`

	// pos is the record's byte position in the file it was read from,
	// for errors about it; it is not written.
	pos int64
}

// GroupOffset is one committed offset of a group.
type GroupOffset struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata,omitempty"`
	CommitTimeMs int64  `json:"commit_ms"`
	ExpireAtMs   int64  `json:"expire_ms,omitempty"` // 0: the group's retention applies
}

// GroupOffsets is a group's committed offsets and its kind ("classic" or
// "consumer", as the broker names them).
type GroupOffsets struct {
	Group   string
	Kind    string
	Offsets []GroupOffset
}

func topicIDString(id storage.TopicID) string { return hex.EncodeToString(id[:]) }

func parseTopicID(s string) (storage.TopicID, error) {
	var id storage.TopicID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("topic ID %q: want 32 hex digits", s)
	}
	copy(id[:], b)
	return id, nil
}

// appendMetaRecord encodes r onto buf.
func appendMetaRecord(buf []byte, r metaRecord) []byte {
	payload, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings, numbers and string maps always marshal
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
	return append(buf, payload...)
}

// readMetaLog decodes the records of a metadata log held in b. valid is
// the length of the whole records before a torn tail (len(b) without
// one). Anything else invalid is a *CorruptError (no-silent-loss).
func readMetaLog(b []byte) (recs []metaRecord, valid int, err error) {
	v, err := scanMeta(bytes.NewReader(b), int64(len(b)), metaFile, func(r metaRecord) error {
		recs = append(recs, r)
		return nil
	})
	return recs, int(v), err
}

// scanMeta reads the records of the metadata log in r, of size bytes, in
// bounded steps (one buffered reader, one payload buffer no larger than
// the largest record), and calls fn with each in order, its position
// set. It returns where the whole records end: size, or the start of a
// torn tail (tail.go). Anything else invalid is a *CorruptError naming
// name and the byte.
func scanMeta(r io.ReaderAt, size int64, name string, fn func(metaRecord) error) (valid int64, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10)
	var hdr [metaHeaderBytes]byte
	var payload []byte
	pos := int64(0)
	for pos < size {
		if size-pos < metaHeaderBytes {
			return pos, tornMetaTail(r, name, pos, size, "a record header cut short")
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]))
		if n == 0 || n > maxMetaRecordBytes {
			return pos, tornMetaTail(r, name, pos, size, fmt.Sprintf("record length %d", n))
		}
		end := pos + metaHeaderBytes + n
		if end > size {
			return pos, tornMetaTail(r, name, pos, size, fmt.Sprintf("a record of %d bytes cut short at %d", n, size-pos-metaHeaderBytes))
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(br, payload); err != nil {
			return pos, fmt.Errorf("%s: %w", name, err)
		}
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return pos, tornMetaTail(r, name, pos, size, "CRC mismatch")
		}
		var rec metaRecord
		if err := json.Unmarshal(payload, &rec); err != nil {
			return pos, corruptAt(name, pos, "a record whose CRC matches does not decode: %v", err)
		}
		rec.pos = pos
		if err := fn(rec); err != nil {
			return pos, err
		}
		pos = end
	}
	return pos, nil
}

// metaLog appends records to meta.log. Dir.mu guards it.
type metaLog struct {
	f    *os.File
	sync bool
	buf  []byte
	// Background compaction (compact.go): base is how many records the
	// file's snapshot holds, since how many were appended after it; every
	// is Options.CompactEvery resolved (negative: never); kick asks the
	// compactor to run.
	base, since, every int
	kick               chan struct{}
}

func (m *metaLog) append(r metaRecord) error {
	if m == nil {
		return errors.New("the data directory is closed")
	}
	m.buf = appendMetaRecord(m.buf[:0], r)
	if _, err := m.f.Write(m.buf); err != nil {
		return fmt.Errorf("%s: %w", m.f.Name(), err)
	}
	if m.sync {
		if err := m.f.Sync(); err != nil {
			return fmt.Errorf("%s: %w", m.f.Name(), err)
		}
	}
	m.since++
	if m.kick != nil && m.due() {
		select {
		case m.kick <- struct{}{}:
		default: // one is asked for already
		}
	}
	return nil
}

func (m *metaLog) close() error { return m.f.Close() }

// readMetaFile reads the metadata log at name in bounded steps
// (scanMeta); valid is where the whole records end, dropped how many
// bytes of a torn tail follow them. It changes nothing: the snapshot Recover writes over the file
// leaves the tail behind. A missing file is empty; a symbolic link is
// refused (no-symlinks).
func readMetaFile(name string) (recs []metaRecord, valid, dropped int64, err error) {
	f, err := openNoFollow(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	valid, err = scanMeta(f, fi.Size(), name, func(r metaRecord) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	return recs, valid, fi.Size() - valid, nil
}
