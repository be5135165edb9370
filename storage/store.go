// Package storage holds topics and their partition logs in memory, as the
// record batches clients produced. It knows record batch headers (magic 2)
// but no Kafka request or response: time comes in as an argument and errors
// go out as the sentinels in errors.go.
package storage

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// TopicID is a topic's 16-byte UUID, never all zero.
type TopicID [16]byte

// Topic is a named set of partitions with configuration overrides.
type Topic struct {
	Name string
	ID   TopicID

	mu         sync.RWMutex
	partitions []*Partition
	configs    map[string]string // overrides of the broker defaults, by Kafka property name
	journal    Journal           // nil without a data directory
}

// Partitions returns the topic's partitions in index order.
func (t *Topic) Partitions() []*Partition {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.partitions
}

// Partition returns partition i, or nil if the topic has no such partition.
func (t *Topic) Partition(i int32) *Partition {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if i < 0 || int(i) >= len(t.partitions) {
		return nil
	}
	return t.partitions[i]
}

// Configs returns a copy of the topic's configuration overrides.
func (t *Topic) Configs() map[string]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.configs)
}

// Config returns one override and whether it is set.
func (t *Topic) Config(name string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.configs[name]
	return v, ok
}

// UpdateConfigs replaces the topic's overrides with what update returns
// when given a copy of the current ones, a map update may write to even
// when there are none; if update fails nothing changes.
// Concurrent updates are applied one after the other, so an incremental
// change is never lost to another.
func (t *Topic) UpdateConfigs(update func(current map[string]string) (map[string]string, error)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	current := maps.Clone(t.configs)
	if current == nil { // a topic made with no overrides (auto-created)
		current = make(map[string]string)
	}
	next, err := update(current)
	if err != nil {
		return err
	}
	if t.journal != nil && !maps.Equal(next, t.configs) {
		if err := t.journal.ConfigsSet(t.ID, next); err != nil {
			return fmt.Errorf("%w: configs of topic %q: %v", ErrStorage, t.Name, err)
		}
	}
	t.configs = maps.Clone(next)
	return nil
}

// AddPartitions grows the topic to total partitions, adding at most
// MaxPartitionsPerRequest (else ErrTooManyPartitions).
func (t *Topic) AddPartitions(total int32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(total) <= len(t.partitions) {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d", ErrInvalidPartitions, t.Name, len(t.partitions), total)
	}
	// Whatever path asks, no call makes more than one request may.
	if int64(total)-int64(len(t.partitions)) > MaxPartitionsPerRequest {
		return ErrTooManyPartitions
	}
	if t.journal != nil {
		if err := t.journal.PartitionsAdded(t.ID, total); err != nil {
			return fmt.Errorf("%w: partitions of topic %q: %v", ErrStorage, t.Name, err)
		}
	}
	grown := slices.Clone(t.partitions)
	for i := int32(len(grown)); i < total; i++ {
		grown = append(grown, t.makePartition(i))
	}
	t.partitions = grown // readers keep the old slice; it is never modified
	return nil
}

// Store is the set of topics. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	byName  map[string]*Topic
	byID    map[TopicID]*Topic
	journal Journal // nil without a data directory; set once by SetJournal
	listing listing // what Topics returns, kept sorted (listing.go)
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{byName: make(map[string]*Topic), byID: make(map[TopicID]*Topic)}
}

// Topic returns the named topic or nil.
func (s *Store) Topic(name string) *Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byName[name]
}

// TopicByID returns the topic with the ID or nil.
func (s *Store) TopicByID(id TopicID) *Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// TopicName returns the name of the topic whose ID is id; false when no
// topic has it.
func (s *Store) TopicName(id TopicID) (string, bool) {
	if t := s.TopicByID(id); t != nil {
		return t.Name, true
	}
	return "", false
}

// TopicNames returns the name of every topic, sorted.
func (s *Store) TopicNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.byName))
}

// Topics returns every topic, sorted by name. The slice is shared by
// every caller until the set of topics changes: read it, never modify
// it. Its cost is that of the topics created since the last call, not a
// sort of them all (listing.go).
func (s *Store) Topics() []*Topic {
	s.mu.RLock()
	ts, ok := s.listing.current()
	s.mu.RUnlock()
	if ok {
		return ts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listing.refresh(s.byName)
}

// checkNewTopic checks what CreateTopics checks of a topic before it
// exists: a valid name, and a partition count from 1 to
// MaxPartitionsPerRequest.
func checkNewTopic(name string, partitions int32) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if partitions <= 0 {
		return fmt.Errorf("%w: %d, must be at least 1", ErrInvalidPartitions, partitions)
	}
	if partitions > MaxPartitionsPerRequest {
		return ErrTooManyPartitions
	}
	return nil
}

// CreateTopic adds a topic with the given partitions and overrides. The
// name must be valid (ValidateTopicName) and the count positive and at
// most MaxPartitionsPerRequest (else ErrTooManyPartitions, before anything
// is allocated): every creating path, auto-creation included, meets it.
func (s *Store) CreateTopic(name string, partitions int32, configs map[string]string) (*Topic, error) {
	if err := checkNewTopic(name, partitions); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return nil, fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	t := &Topic{Name: name, ID: s.newTopicIDLocked(), configs: maps.Clone(configs), journal: s.journal}
	if s.journal != nil {
		if err := s.journal.TopicCreated(name, t.ID, partitions, configs); err != nil {
			return nil, fmt.Errorf("%w: topic %q: %v", ErrStorage, name, err)
		}
	}
	for i := range partitions {
		t.partitions = append(t.partitions, t.makePartition(i))
	}
	s.byName[name] = t
	s.byID[t.ID] = t
	s.listing.added(t)
	return t, nil
}

// DeleteTopic removes the named topic.
func (s *Store) DeleteTopic(name string) (*Topic, error) {
	s.mu.Lock()
	t := s.byName[name]
	if t == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return s.deleteLocked(t)
}

// DeleteTopicByID removes the topic with the ID.
func (s *Store) DeleteTopicByID(id TopicID) (*Topic, error) {
	s.mu.Lock()
	t := s.byID[id]
	if t == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %x", ErrUnknownTopicID, id[:])
	}
	return s.deleteLocked(t)
}

// deleteLocked removes t and unlocks s.mu; then the subscribers of its
// partitions (share sessions) are told, once the topic is gone for every
// reader, so they look again and answer it unknown.
func (s *Store) deleteLocked(t *Topic) (*Topic, error) {
	if err := s.journalDeleteLocked(t); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	delete(s.byName, t.Name)
	delete(s.byID, t.ID)
	s.listing.deleted()
	s.mu.Unlock()
	for _, p := range t.Partitions() {
		p.waiters.notifySubscribers()
	}
	return t, nil
}

func (s *Store) journalDeleteLocked(t *Topic) error {
	if s.journal == nil {
		return nil
	}
	if err := s.journal.TopicDeleted(t.ID); err != nil {
		return fmt.Errorf("%w: deleting topic %q: %v", ErrStorage, t.Name, err)
	}
	return nil
}

// RestoreTopic adds a topic read back from a data directory, with its
// original ID, before the store serves; no Journal is told.
func (s *Store) RestoreTopic(name string, id TopicID, partitions int32, configs map[string]string) (*Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	if partitions <= 0 || id == (TopicID{}) {
		return nil, fmt.Errorf("%w: topic %q: %d partitions, ID %x", ErrInvalidPartitions, name, partitions, id[:])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName[name] != nil || s.byID[id] != nil {
		return nil, fmt.Errorf("%w: %q (ID %x)", ErrTopicExists, name, id[:])
	}
	t := &Topic{Name: name, ID: id, configs: maps.Clone(configs)}
	for i := range partitions {
		t.partitions = append(t.partitions, t.makePartition(i))
	}
	s.byName[name] = t
	s.byID[id] = t
	s.listing.added(t)
	return t, nil
}

func (s *Store) newTopicIDLocked() TopicID {
	for {
		var id TopicID
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
		if _, taken := s.byID[id]; id != (TopicID{}) && !taken {
			return id
		}
	}
}

// ValidateTopicName applies Kafka's topic name rules: 1 to 249 characters of
// ASCII letters, digits, '.', '_' and '-', and not "." or "..".
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: %d characters, at most 249", ErrInvalidTopic, len(name))
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidTopic, name, c)
		}
	}
	return nil
}
