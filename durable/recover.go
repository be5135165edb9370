package durable

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/sharebroker/sharebroker/storage"
)

// Report says what Recover did, for the broker to log.
type Report struct {
	Topics, Partitions int
	Batches            int64
	Bytes              int64
	// Truncated lists the torn tails cut off (torn-tail).
	Truncated []Truncation
	// Removed lists the directories of topics the metadata log does not
	// know (deleted before a crash finished removing them).
	Removed []string
}

// Truncation is one torn tail cut off a file.
type Truncation struct {
	File    string
	Dropped int64 // bytes
}

// Recover reads the directory back into store, which must be empty and not
// yet serving: the metadata log gives the topics, their partitions, configs
// and log start offsets; each partition's segments give its batches. Torn
// tails are cut off and reported; anything else unreadable is an error
// (no-silent-loss). It then rewrites the metadata log as a snapshot
// (compact-on-start) and attaches the Dir to store as its journal.
func (d *Dir) Recover(store *storage.Store) (Report, error) {
	var rep Report
	metaName := filepath.Join(d.path, metaFile)
	recs, dropped, err := readMetaFile(metaName)
	if err != nil {
		return rep, err
	}
	if dropped > 0 {
		rep.Truncated = append(rep.Truncated, Truncation{File: metaName, Dropped: dropped})
	}
	st, err := replay(recs)
	if err != nil {
		return rep, err
	}
	topics := st.topics
	var jobs []partitionJob
	for _, id := range sortedIDs(topics) {
		t := topics[id]
		t.policy = d.opts.Policy(t.configs)
		topic, err := store.RestoreTopic(t.name, id, t.parts, t.configs)
		if err != nil {
			return rep, fmt.Errorf("%w: %s: %v", ErrCorrupt, metaName, err)
		}
		for i, p := range topic.Partitions() {
			jobs = append(jobs, partitionJob{id: id, index: int32(i), t: t, p: p})
		}
		rep.Topics++
	}
	d.recoverPartitions(jobs)
	for _, j := range jobs {
		if j.err != nil {
			return rep, j.err
		}
		j.t.sinks[j.index] = j.sink
		rep.Partitions++
		rep.Batches += j.rep.Batches
		rep.Bytes += j.rep.Bytes
		rep.Truncated = append(rep.Truncated, j.rep.Truncated...)
	}
	if err := d.removeUnknown(topics, &rep); err != nil {
		return rep, err
	}
	snap := snapshot(st)
	if err := writeFileAtomic(metaName, snap); err != nil {
		return rep, fmt.Errorf("compacting %s: %w", metaName, err)
	}
	f, err := os.OpenFile(metaName, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return rep, err
	}
	d.mu.Lock()
	d.metaState = *st
	d.startCompactor()
	d.meta = &metaLog{f: f, sync: d.opts.SyncMeta, base: countMetaRecords(snap),
		every: d.opts.compactEvery(), kick: d.compactKick}
	d.mu.Unlock()
	store.SetJournal(d)
	return rep, nil
}

// metaState is what the metadata log says.
type metaState struct {
	topics map[storage.TopicID]*topicFiles
	// nextPID is the end of the last reserved producer ID block.
	nextPID      int64
	groupConfigs map[string]map[string]string
	groupOffsets map[string]*GroupOffsets
	shares       map[ShareKey]*ShareState
	scram        map[SCRAMKey]*SCRAMCredential
	acls         []ACL
	txns         map[string]TxnState
	pending      map[pendingKey]*PendingOffsets
}

// replay applies the metadata log's records in order.
func replay(recs []metaRecord) (*metaState, error) {
	return replayOnto(newMetaState(), recs)
}

func newMetaState() *metaState {
	return &metaState{topics: make(map[storage.TopicID]*topicFiles),
		groupConfigs: make(map[string]map[string]string), groupOffsets: make(map[string]*GroupOffsets),
		shares: make(map[ShareKey]*ShareState), scram: make(map[SCRAMKey]*SCRAMCredential),
		txns: make(map[string]TxnState), pending: make(map[pendingKey]*PendingOffsets)}
}

// replayOnto applies recs, in order, to st, the state of the records
// before them (background compaction carries it from one run to the next).
func replayOnto(st *metaState, recs []metaRecord) (*metaState, error) {
	topics := st.topics
	for i, r := range recs {
		bad := func(why string) error {
			return fmt.Errorf("%w: %s record %d (%s): %s", ErrCorrupt, metaFile, i, r.Op, why)
		}
		switch r.Op {
		case opProducerIDs:
			st.nextPID = max(st.nextPID, r.Next)
			continue
		case opGroupConfig:
			setGroupConfig(st.groupConfigs, r.Group, r.Configs)
			continue
		case opOffsets:
			setGroupOffsets(st.groupOffsets, GroupOffsets{Group: r.Group, Kind: r.Kind, Offsets: r.Offsets})
			if len(r.Offsets) == 0 {
				dropGroupPending(st.pending, r.Group)
			}
			continue
		case opPendingOffsets:
			setPendingOffsets(st.pending, PendingOffsets{Group: r.Group, Kind: r.Kind, ProducerID: r.ProducerID, Offsets: r.Offsets})
			continue
		case opSCRAM, opSCRAMDelete:
			replaySCRAM(st.scram, r)
			continue
		case opACL, opACLDelete:
			st.acls = replayACLs(st.acls, r)
			continue
		case opTxn, opTxnDelete:
			replayTxn(st.txns, r)
			continue
		case opShareSnapshot, opShareUpdate, opShareDelete:
			if err := replayShare(st.shares, r); err != nil {
				return nil, bad(err.Error())
			}
			continue
		}
		id, err := parseTopicID(r.ID)
		if err != nil {
			return nil, bad(err.Error())
		}
		t := topics[id]
		if r.Op != opTopic && r.Op != opDelete && t == nil {
			return nil, bad("unknown topic " + r.ID)
		}
		switch r.Op {
		case opTopic:
			topics[id] = &topicFiles{name: r.Name, configs: r.Configs, parts: r.Partitions,
				sinks: make(map[int32]*sink), logStarts: make(map[int32]int64)}
		case opPartitions:
			t.parts = r.Partitions
		case opConfigs:
			t.configs = r.Configs
		case opDelete:
			delete(topics, id)
		case opLogStart:
			t.logStarts[r.Partition] = max(t.logStarts[r.Partition], r.Offset)
		default:
			return nil, bad("unknown op: written by a newer broker")
		}
	}
	// Share state of a deleted topic went with it, as Kafka deletes it
	// (DeleteShareGroupState) when the topic goes.
	for k := range st.shares {
		if topics[k.TopicID] == nil {
			delete(st.shares, k)
		}
	}
	return st, nil
}

func sortedIDs(topics map[storage.TopicID]*topicFiles) []storage.TopicID {
	ids := make([]storage.TopicID, 0, len(topics))
	for id := range topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b storage.TopicID) int { return cmp.Compare(topics[a].name, topics[b].name) })
	return ids
}

// snapshot is the metadata log with one record per live fact.
func snapshot(st *metaState) []byte {
	var b []byte
	topics := st.topics
	for _, id := range sortedIDs(topics) {
		t := topics[id]
		b = appendMetaRecord(b, metaRecord{Op: opTopic, Name: t.name, ID: topicIDString(id), Partitions: t.parts, Configs: t.configs})
		parts := make([]int32, 0, len(t.logStarts))
		for p := range t.logStarts {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		for _, p := range parts {
			if off := t.logStarts[p]; off > 0 {
				b = appendMetaRecord(b, metaRecord{Op: opLogStart, ID: topicIDString(id), Partition: p, Offset: off})
			}
		}
	}
	if st.nextPID > 0 {
		b = appendMetaRecord(b, metaRecord{Op: opProducerIDs, Next: st.nextPID})
	}
	for _, id := range slices.Sorted(maps.Keys(st.groupConfigs)) {
		b = appendMetaRecord(b, metaRecord{Op: opGroupConfig, Group: id, Configs: st.groupConfigs[id]})
	}
	for _, id := range slices.Sorted(maps.Keys(st.groupOffsets)) {
		g := st.groupOffsets[id]
		b = appendMetaRecord(b, metaRecord{Op: opOffsets, Group: id, Kind: g.Kind, Offsets: g.Offsets})
	}
	b = appendSCRAM(b, st.scram)
	b = appendACLs(b, st.acls)
	b = appendTxns(b, st.txns)
	b = appendPending(b, st.pending)
	return appendShareSnapshots(b, st.shares)
}

// partitionJob is the recovery of one partition: its input, and what
// recoverPartition made of it.
type partitionJob struct {
	id    storage.TopicID
	index int32
	t     *topicFiles
	p     *storage.Partition

	sink *sink
	rep  Report
	err  error
}

// recoverPartitions runs the jobs, as many at a time as Go runs threads:
// partitions share nothing, and checking CRCs and copying records is most
// of a restart's time (BenchmarkRestartDataDir).
func (d *Dir) recoverPartitions(jobs []partitionJob) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range jobs {
		j := &jobs[i]
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			j.sink, j.err = d.recoverPartition(j.id, j.index, j.t, j.p, &j.rep)
		}()
	}
	wg.Wait()
}

// recoverPartition reads one partition's segments into p and returns its
// sink, positioned after the last whole batch.
func (d *Dir) recoverPartition(id storage.TopicID, index int32, t *topicFiles, p *storage.Partition, rep *Report) (*sink, error) {
	s := d.newSink(id, index, t.policy)
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	bases := segmentBases(names)
	logStart := t.logStarts[index]
	// Segments wholly below the log start were due for deletion
	// (whole-segments-go); a crash came first.
	for len(bases) > 1 && bases[1] <= logStart {
		if err := os.Remove(filepath.Join(s.dir, segmentName(bases[0]))); err != nil {
			return nil, err
		}
		bases = bases[1:]
	}
	for k, base := range bases {
		name := filepath.Join(s.dir, segmentName(base))
		size, err := d.recoverSegment(name, base, s.end, k == len(bases)-1, p, rep)
		if err != nil {
			s.close()
			return nil, err
		}
		r, err := os.Open(name)
		if err != nil {
			s.close()
			return nil, err
		}
		s.segs = append(s.segs, segment{base: base, size: size, start: s.end, r: r})
		s.end += size
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].size == 0 {
		// An empty last segment (its only batch was torn): the next batch
		// may not get its name's offset, so it goes.
		if err := os.Remove(filepath.Join(s.dir, segmentName(s.segs[n-1].base))); err != nil {
			return nil, err
		}
		s.segs[n-1].close()
		s.segs = s.segs[:n-1]
	}
	p.RestoreLogStart(logStart)
	s.next = p.Offsets().HighWatermark
	return s, nil
}

// recoverSegment indexes the batches of one segment, which starts at
// stream position start, into p, cutting a torn tail, and returns the
// segment's size after that. Every batch is read and its CRC checked
// (no-silent-loss), in blocks of one reused buffer; none is kept: p reads
// them from the file when asked (reads-from-files).
func (d *Dir) recoverSegment(name string, base, start int64, last bool, p *storage.Partition, rep *Report) (int64, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	first := true
	valid, err := scanSegment(f, fi.Size(), name, last, blockBytes, func(batch []byte, pos int64) error {
		h, _ := storage.ParseBatch(batch) // scanSegment validated it
		if first && h.BaseOffset != base {
			return fmt.Errorf("%w: %s starts at offset %d, its name says %d", ErrCorrupt, name, h.BaseOffset, base)
		}
		first = false
		rep.Batches++
		rep.Bytes += int64(len(batch))
		if err := p.RestoreAt(batch, start+pos); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
		}
		return nil
	}, nil)
	if err != nil {
		return 0, err
	}
	if valid < fi.Size() {
		if err := f.Truncate(valid); err != nil {
			return 0, fmt.Errorf("%s: cutting a torn tail: %w", name, err)
		}
		rep.Truncated = append(rep.Truncated, Truncation{File: name, Dropped: fi.Size() - valid})
	}
	return valid, nil
}

// removeUnknown removes the directories under logs/ of topics the
// metadata log does not know.
func (d *Dir) removeUnknown(topics map[storage.TopicID]*topicFiles, rep *Report) error {
	root := filepath.Join(d.path, logsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if id, err := parseTopicID(e.Name()); err == nil && topics[id] != nil {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		rep.Removed = append(rep.Removed, dir)
	}
	return nil
}
