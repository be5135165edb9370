package durable

import (
	"bufio"
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
// the length of the whole records before a torn tail (len(b) without one).
// A bad record followed by more data is ErrCorrupt (no-silent-loss).
func readMetaLog(b []byte) (recs []metaRecord, valid int, err error) {
	pos := 0
	for pos < len(b) {
		bad := func(why string) ([]metaRecord, int, error) {
			if allZero(b[pos:]) {
				return recs, pos, nil
			}
			return recs, pos, fmt.Errorf("%w: %s at byte %d: %s", ErrCorrupt, metaFile, pos, why)
		}
		if len(b)-pos < metaHeaderBytes {
			return recs, pos, nil // torn: the header itself is cut short
		}
		n := int(binary.BigEndian.Uint32(b[pos:]))
		if n == 0 || n > maxMetaRecordBytes {
			return bad(fmt.Sprintf("record length %d", n))
		}
		end := pos + metaHeaderBytes + n
		if end > len(b) {
			return recs, pos, nil // torn: the payload is cut short
		}
		payload := b[pos+metaHeaderBytes : end]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[pos+4:]) {
			if end == len(b) {
				return recs, pos, nil // torn: the last record's bytes never all reached the file
			}
			return bad("CRC mismatch")
		}
		var r metaRecord
		if err := json.Unmarshal(payload, &r); err != nil {
			return recs, pos, fmt.Errorf("%w: %s at byte %d: %v", ErrCorrupt, metaFile, pos, err)
		}
		recs = append(recs, r)
		pos = end
	}
	return recs, pos, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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

// readMetaFile reads the metadata log at name, cutting a torn tail off the
// file; dropped is how many bytes that took. A missing file is empty.
func readMetaFile(name string) (recs []metaRecord, dropped int64, err error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	recs, valid, err := readMetaLog(b)
	if err != nil {
		return nil, 0, err
	}
	if valid < len(b) {
		if err := f.Truncate(int64(valid)); err != nil {
			return nil, 0, fmt.Errorf("%s: cutting a torn tail: %w", name, err)
		}
	}
	return recs, int64(len(b) - valid), nil
}
