package durable

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/sharebroker/sharebroker/storage"
)

// The Dir as the store's storage.Journal: each change is a metadata-log
// record written before the store makes it visible (metadata-first). The
// store calls these with its own or a topic's lock held. Dir.mu is never
// held while a sink's lock is taken: a sink holds its lock when it records
// a log start move here.

var _ storage.Journal = (*Dir)(nil)

// TopicCreated records a new topic.
func (d *Dir) TopicCreated(name string, id storage.TopicID, partitions int32, configs map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.meta.append(metaRecord{Op: opTopic, Name: name, ID: topicIDString(id), Partitions: partitions, Configs: configs}); err != nil {
		return err
	}
	d.topics[id] = &topicFiles{
		name:      name,
		configs:   maps.Clone(configs),
		parts:     partitions,
		policy:    d.opts.Policy(configs),
		sinks:     make(map[int32]*sink),
		logStarts: make(map[int32]int64),
	}
	return nil
}

// PartitionsAdded records a topic's new partition count.
func (d *Dir) PartitionsAdded(id storage.TopicID, total int32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[id]
	if t == nil {
		return fmt.Errorf("topic %x is not in the data directory", id[:])
	}
	if err := d.meta.append(metaRecord{Op: opPartitions, ID: topicIDString(id), Partitions: total}); err != nil {
		return err
	}
	t.parts = total
	return nil
}

// ConfigsSet records a topic's overrides; its segment size and flush
// settings apply from the next append.
func (d *Dir) ConfigsSet(id storage.TopicID, configs map[string]string) error {
	d.mu.Lock()
	t := d.topics[id]
	if t == nil {
		d.mu.Unlock()
		return fmt.Errorf("topic %x is not in the data directory", id[:])
	}
	if err := d.meta.append(metaRecord{Op: opConfigs, ID: topicIDString(id), Configs: configs}); err != nil {
		d.mu.Unlock()
		return err
	}
	t.configs = maps.Clone(configs)
	t.policy = d.opts.Policy(configs)
	policy, sinks := t.policy, maps.Clone(t.sinks)
	d.mu.Unlock()
	for _, s := range sinks {
		s.setPolicy(policy)
	}
	return nil
}

// TopicDeleted records a topic's deletion, then removes its files.
func (d *Dir) TopicDeleted(id storage.TopicID) error {
	d.mu.Lock()
	t := d.topics[id]
	if err := d.meta.append(metaRecord{Op: opDelete, ID: topicIDString(id)}); err != nil {
		d.mu.Unlock()
		return err
	}
	delete(d.topics, id)
	d.mu.Unlock()
	if t != nil {
		for _, s := range t.sinks {
			s.close()
		}
	}
	// The deletion is logged: a crash before the files are gone leaves a
	// directory recovery removes as unknown.
	return os.RemoveAll(filepath.Join(d.path, logsDir, topicIDString(id)))
}

// Sink returns the sink of partition index of topic id: the one recovery
// made, or a new one with no files yet.
func (d *Dir) Sink(id storage.TopicID, index int32) storage.Sink {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[id]
	if t == nil {
		// The store never asks for a topic it did not create through us.
		panic(fmt.Sprintf("durable: sink of unknown topic %x", id[:]))
	}
	if s := t.sinks[index]; s != nil {
		return s
	}
	s := d.newSink(id, index, t.policy)
	t.sinks[index] = s
	return s
}

func (d *Dir) newSink(id storage.TopicID, index int32, p Policy) *sink {
	return &sink{d: d, id: id, index: index, dir: d.partitionDir(id, index), policy: p, lastSync: d.opts.Now()}
}

// recordLogStart records a partition's log start offset (a sink calls it
// with its own lock held).
func (d *Dir) recordLogStart(id storage.TopicID, index int32, offset int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.meta.append(metaRecord{Op: opLogStart, ID: topicIDString(id), Partition: index, Offset: offset}); err != nil {
		return err
	}
	if t := d.topics[id]; t != nil {
		t.logStarts[index] = offset
	}
	return nil
}

// ReserveProducerIDs records that producer IDs below next may be handed
// out (producer-ids-reserved).
func (d *Dir) ReserveProducerIDs(next int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.meta.append(metaRecord{Op: opProducerIDs, Next: next}); err != nil {
		return err
	}
	d.nextPID = max(d.nextPID, next)
	return nil
}

// ReservedProducerIDs returns the end of the producer IDs reserved so far:
// none below it may be handed out again.
func (d *Dir) ReservedProducerIDs() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nextPID
}
