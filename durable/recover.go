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
	"strings"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/storage"
)

// Report says what Recover did, for the broker to log.
type Report struct {
	Topics, Partitions int
	Batches            int64
	Bytes              int64
	// MetaRecords is how many metadata-log records were replayed.
	MetaRecords int
	// Truncated lists the torn tails cut off (torn-tail).
	Truncated []Truncation
	// Removed lists what recovery deleted, none of it holding a record
	// the metadata log still wants: segments wholly below their
	// partition's log start (whole-segments-go), a last segment empty
	// once its torn tail is cut, and the directories of topics whose
	// deletion the metadata log holds (a crash came before the files
	// went).
	Removed []Removal
	// SetAside lists what was moved to lost+found instead of deleted:
	// directories under logs/ of topics the metadata log does not know
	// (set-aside-not-deleted).
	SetAside []Move
}

// Truncation is one torn tail cut off a file: bytes [At, At+Dropped).
type Truncation struct {
	File    string
	At      int64
	Dropped int64 // bytes
}

// Move is a file or directory moved from From to To.
type Move struct{ From, To string }

// Removal is a file or directory recovery deleted, and why it could go.
type Removal struct{ Name, Why string }

// Why a Removal could go.
const (
	whyBelowLogStart = "every batch in it is below the partition's log start"
	whyEmptyLast     = "the partition's last segment, empty once its torn tail is cut"
	whyDeletedTopic  = "its topic's deletion is in the metadata log"
)

// Recover reads the directory back into store, which must be empty and not
// yet serving: the metadata log gives the topics, their partitions, configs
// and log start offsets; each partition's segments give its batches. Torn
// tails are cut off and reported; anything else unreadable is a
// *CorruptError naming the file and byte (no-silent-loss), and then no
// file was changed: every cut, removal and move waits until the whole
// directory has read back. It then rewrites the metadata log as a
// snapshot (compact-on-start) and attaches the Dir to store as its
// journal.
func (d *Dir) Recover(store *storage.Store) (Report, error) {
	rep, err := d.recover(store)
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.Dir = d.path
	}
	return rep, err
}

func (d *Dir) recover(store *storage.Store) (Report, error) {
	var rep Report
	metaName := filepath.Join(d.path, metaFile)
	if err := checkNotSymlink(filepath.Join(d.path, logsDir)); err != nil {
		return rep, err
	}
	recs, valid, dropped, err := readMetaFile(metaName)
	if err != nil {
		return rep, err
	}
	if dropped > 0 {
		rep.Truncated = append(rep.Truncated, Truncation{File: metaName, At: valid, Dropped: dropped})
	}
	rep.MetaRecords = len(recs)
	st, err := replay(recs)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.File = metaName
		}
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
			for _, j := range jobs {
				if j.sink != nil {
					j.sink.close()
				}
			}
			return rep, j.err
		}
	}
	// Everything read back: now the due changes.
	for _, j := range jobs {
		if err := d.applyPlan(&j.plan, &rep); err != nil {
			return rep, err
		}
		j.t.sinks[j.index] = j.sink
		rep.Partitions++
		rep.Batches += j.rep.Batches
		rep.Bytes += j.rep.Bytes
	}
	if err := d.setAsideUnknown(topics, st.deleted, &rep); err != nil {
		return rep, err
	}
	snap := snapshot(st)
	if err := writeFileAtomic(metaName, snap); err != nil {
		return rep, fmt.Errorf("compacting %s: %w", metaName, err)
	}
	f, err := openNoFollow(metaName, os.O_WRONLY|os.O_APPEND, 0)
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

// plan is what recovering a partition found due: torn tails to cut and
// files to remove, done only once every partition has read back.
type plan struct {
	cuts    []Truncation
	removes []Removal
}

func (d *Dir) applyPlan(p *plan, rep *Report) error {
	for _, c := range p.cuts {
		f, err := openNoFollow(c.File, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%s: cutting a torn tail: %w", c.File, err)
		}
		err = f.Truncate(c.At)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: cutting a torn tail: %w", c.File, err)
		}
		rep.Truncated = append(rep.Truncated, c)
	}
	for _, r := range p.removes {
		if err := os.Remove(r.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		rep.Removed = append(rep.Removed, r)
	}
	return nil
}

// metaState is what the metadata log says.
type metaState struct {
	topics map[storage.TopicID]*topicFiles
	// nextPID is the end of the last reserved producer ID block.
	nextPID      int64
	groupConfigs map[string]map[string]string
	groupOffsets map[string]*GroupOffsets
	// clientMetrics are the CLIENT_METRICS subscriptions' configs, by name.
	clientMetrics map[string]map[string]string
	shares        map[ShareKey]*ShareState
	scram         map[SCRAMKey]*SCRAMCredential
	acls          []ACL
	txns          map[string]TxnState
	pending       map[pendingKey]*PendingOffsets
	// features are the finalized feature levels; nil if never recorded.
	features *FeatureLevels
	// deleted are the topics whose deletion was replayed: their files
	// may go (metadata-first). Only recovery reads it.
	deleted map[storage.TopicID]bool
}

// replay applies the metadata log's records in order.
func replay(recs []metaRecord) (*metaState, error) {
	return replayOnto(newMetaState(), recs)
}

func newMetaState() *metaState {
	return &metaState{topics: make(map[storage.TopicID]*topicFiles),
		groupConfigs: make(map[string]map[string]string), groupOffsets: make(map[string]*GroupOffsets),
		shares: make(map[ShareKey]*ShareState), scram: make(map[SCRAMKey]*SCRAMCredential),
		txns: make(map[string]TxnState), pending: make(map[pendingKey]*PendingOffsets),
		deleted: make(map[storage.TopicID]bool), clientMetrics: make(map[string]map[string]string)}
}

// replayOnto applies recs, in order, to st, the state of the records
// before them (background compaction carries it from one run to the next).
func replayOnto(st *metaState, recs []metaRecord) (*metaState, error) {
	topics := st.topics
	for i, r := range recs {
		bad := func(why string) error {
			return corruptAt(metaFile, r.pos, "record %d (%s), whose CRC matches: %s", i, r.Op, why)
		}
		switch r.Op {
		case opProducerIDs:
			st.nextPID = max(st.nextPID, r.Next)
			continue
		case opGroupConfig:
			setGroupConfig(st.groupConfigs, r.Group, r.Configs)
			continue
		case opFeatures:
			st.features = &FeatureLevels{Levels: r.Levels, Epoch: r.Epoch}
			continue
		case opClientMetrics:
			setGroupConfig(st.clientMetrics, r.Name, r.Configs)
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
			st.deleted[id] = true
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
	b = appendFeatures(b, st.features)
	b = appendClientMetrics(b, st.clientMetrics)
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
	plan plan
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
			j.sink, j.err = d.recoverPartition(j.id, j.index, j.t, j.p, &j.rep, &j.plan)
		}()
	}
	wg.Wait()
}

// recoverPartition reads one partition's segments into p and returns its
// sink, positioned after the last whole batch; what is due on disk (a
// torn tail to cut, segments to remove) goes into pl.
func (d *Dir) recoverPartition(id storage.TopicID, index int32, t *topicFiles, p *storage.Partition, rep *Report, pl *plan) (*sink, error) {
	s := d.newSink(id, index, t.policy)
	if err := checkNotSymlink(filepath.Dir(s.dir)); err != nil {
		return nil, err
	}
	if err := checkNotSymlink(s.dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 && strings.HasSuffix(e.Name(), segmentSuffix) {
			return nil, symlinkError(filepath.Join(s.dir, e.Name()))
		}
		names = append(names, e.Name())
	}
	bases := segmentBases(names)
	logStart := t.logStarts[index]
	// Segments wholly below the log start were due for deletion
	// (whole-segments-go); a crash came first.
	for len(bases) > 1 && bases[1] <= logStart {
		pl.removes = append(pl.removes, Removal{filepath.Join(s.dir, segmentName(bases[0])), whyBelowLogStart})
		bases = bases[1:]
	}
	for k, base := range bases {
		name := filepath.Join(s.dir, segmentName(base))
		valid, size, err := d.recoverSegment(name, base, s.end, k == len(bases)-1, p, rep)
		if err != nil {
			s.close()
			return nil, err
		}
		if valid < size {
			pl.cuts = append(pl.cuts, Truncation{File: name, At: valid, Dropped: size - valid})
		}
		if k == len(bases)-1 && valid == 0 {
			// An empty last segment (its only batch was torn): the next
			// batch may not get its name's offset, so it goes.
			pl.removes = append(pl.removes, Removal{name, whyEmptyLast})
			break
		}
		r, err := openNoFollow(name, os.O_RDONLY, 0)
		if err != nil {
			s.close()
			return nil, err
		}
		s.segs = append(s.segs, segment{base: base, size: valid, start: s.end, r: r})
		s.end += valid
	}
	p.RestoreLogStart(logStart)
	s.next = p.Offsets().HighWatermark
	return s, nil
}

// recoverSegment indexes the batches of one segment, which starts at
// stream position start, into p, and returns where its whole batches end
// and its size: a torn tail lies between. Every batch is read and its CRC
// checked (no-silent-loss), in blocks of one reused buffer; none is kept:
// p reads them from the file when asked (reads-from-files). The file is
// not changed.
func (d *Dir) recoverSegment(name string, base, start int64, last bool, p *storage.Partition, rep *Report) (valid, size int64, err error) {
	f, err := openNoFollow(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	first := true
	sc := segmentScan{r: f, size: fi.Size(), name: name, base: base, last: last, maxBatch: d.opts.MaxBatchBytes, block: blockBytes}
	valid, err = sc.scan(func(batch []byte, pos int64) error {
		h, _ := storage.ParseBatch(batch) // scan validated it
		if first && h.BaseOffset != base {
			return corruptAt(name, pos, "the segment's first batch is at offset %d, its name says %d", h.BaseOffset, base)
		}
		first = false
		rep.Batches++
		rep.Bytes += int64(len(batch))
		if err := p.RestoreAt(batch, start+pos); err != nil {
			return corruptAt(name, pos, "%v", err)
		}
		return nil
	}, nil)
	return valid, fi.Size(), err
}

// setAsideUnknown moves the entries under logs/ of topics the metadata
// log does not know to lost+found (set-aside-not-deleted): a lost or
// damaged record must never cost the records it described. Directories
// of topics whose deletion was replayed are removed: the deletion was
// logged before its files went (metadata-first).
func (d *Dir) setAsideUnknown(topics map[storage.TopicID]*topicFiles, deleted map[storage.TopicID]bool, rep *Report) error {
	root := filepath.Join(d.path, logsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		id, err := parseTopicID(e.Name())
		if err == nil && topics[id] != nil {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if err == nil && deleted[id] && e.Type()&os.ModeSymlink == 0 {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			rep.Removed = append(rep.Removed, Removal{dir, whyDeletedTopic})
			continue
		}
		to, err := d.setAside(dir)
		if err != nil {
			return err
		}
		rep.SetAside = append(rep.SetAside, Move{From: dir, To: to})
	}
	return nil
}

// setAside moves name, a file or directory of the data directory, to the
// same path under lost+found/<time>/, and returns where it went. One run
// of recovery or repair uses one <time> directory.
func (d *Dir) setAside(name string) (string, error) {
	rel, err := filepath.Rel(d.path, name)
	if err != nil {
		return "", err
	}
	if _, err := d.setAsideDir(); err != nil {
		return "", err
	}
	to := filepath.Join(d.lostFound, rel)
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(name, to); err != nil {
		return "", err
	}
	return to, syncDir(filepath.Dir(name))
}

// setAsideDir returns this run's lost+found/<time> directory, choosing
// it the first time (it is made when something goes in).
func (d *Dir) setAsideDir() (string, error) {
	if d.lostFound != "" {
		return d.lostFound, nil
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	dir := filepath.Join(d.path, lostFoundDir, stamp)
	for k := 1; ; k++ {
		_, err := os.Lstat(dir)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		dir = filepath.Join(d.path, lostFoundDir, fmt.Sprintf("%s-%d", stamp, k))
	}
	d.lostFound = dir
	return dir, nil
}
