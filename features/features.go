// Package features holds the Kafka release a broker is (--kafka-version)
// and the cluster's KIP-584 feature levels: which levels each feature
// supports, which are finalized, the epoch of that finalized set, and the
// rules UpdateFeatures (API 57) changes them by (docs/features.md).
//
// The tables of each release come from franz-go's kversion, which imports
// kmsg; this package must not, so the edge reads kversion and hands the
// plain values in as a Release.
package features

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Feature names, as Kafka spells them.
const (
	MetadataVersion    = "metadata.version"
	KRaftVersion       = "kraft.version"
	TransactionVersion = "transaction.version"
	GroupVersion       = "group.version"
	ELRVersion         = "eligible.leader.replicas.version"
	ShareVersion       = "share.version"
	StreamsVersion     = "streams.version"
)

// Kafka's releases this broker can be, oldest first; Latest is the default
// (kafka-version-default).
var Releases = []string{"4.0", "4.1", "4.2", "4.3", "4.4"}

// Latest is the newest release this broker implements.
const Latest = "4.4"

// ValidRelease reports whether name is one of Releases.
func ValidRelease(name string) bool { return slices.Contains(Releases, name) }

// ReleaseList is Releases for a message: "4.0, 4.1, 4.2, 4.3 or 4.4".
func ReleaseList() string {
	return strings.Join(Releases[:len(Releases)-1], ", ") + " or " + Releases[len(Releases)-1]
}

// Range is the levels of a feature a broker supports, Min to Max.
type Range struct{ Min, Max int16 }

// Contains reports whether level is in r.
func (r Range) Contains(level int16) bool { return level >= r.Min && level <= r.Max }

// String is how Kafka's VersionRange prints a range: one number when Min
// and Max agree, else "Min-Max".
func (r Range) String() string {
	if r.Min == r.Max {
		return fmt.Sprint(r.Min)
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// Release is one Kafka release's feature table, as kversion gives it: the
// supported range of each feature the release advertises and the level a
// new cluster of it is formatted with.
type Release struct {
	Name      string
	Supported map[string]Range
	Defaults  map[string]int16
}

// NotServed are the features this broker leaves out of every release
// (features-not-served): streams.version gates KIP-1071's streams groups,
// whose APIs (StreamsGroupHeartbeat, StreamsGroupDescribe) no handler
// serves; advertising it finalized at 1 would tell kafka-features.sh and
// the clients that read it that streams groups can be joined here.
var NotServed = []string{StreamsVersion}

// Served returns rel without the features in NotServed.
func Served(rel Release) Release {
	out := Release{Name: rel.Name, Supported: maps.Clone(rel.Supported), Defaults: maps.Clone(rel.Defaults)}
	for _, name := range NotServed {
		delete(out.Supported, name)
		delete(out.Defaults, name)
	}
	return out
}

// Levels is a set of finalized levels by feature name. A feature at level
// 0 is not in it: Kafka removes it (features-level-zero-removes).
type Levels map[string]int16

// Set is the cluster's features: the release's supported ranges, the
// finalized levels and their epoch. Safe for concurrent use; readers take
// a read lock only.
type Set struct {
	release Release
	// controller names the node a refusal names ("Local controller N").
	controller func() int32

	mu        sync.RWMutex
	finalized Levels
	epoch     int64
	// journal, when set, hears every applied change (the data directory).
	journal func(Levels, int64) error
}

// Initial is a new cluster's finalized levels: the release's defaults,
// each overridden by a level the broker's properties give (share.version,
// transaction.version), as kafka-storage format --feature does. An
// override outside the release's supported range is an error naming it.
func Initial(rel Release, overrides map[string]int16) (Levels, error) {
	out := make(Levels, len(rel.Defaults))
	for name, level := range rel.Defaults {
		out[name] = level
	}
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		level := overrides[name]
		r, ok := rel.Supported[name]
		if !ok {
			r = Range{}
		}
		if !r.Contains(level) {
			return nil, fmt.Errorf("%s=%d: Kafka %s supports %s levels %s", name, level, rel.Name, name, r)
		}
		out[name] = level
	}
	for name, level := range out {
		if level == 0 {
			delete(out, name)
		}
	}
	return out, nil
}

// New returns the features of a cluster of release rel at levels, epoch
// epoch; controller returns the node refusals name ("Local controller N").
// A level outside the release's supported range is an error, as a Kafka
// controller refuses to replay a FeatureLevelRecord it does not support
// (features-kept-checked).
func New(rel Release, levels Levels, epoch int64, controller func() int32) (*Set, error) {
	if err := rel.check(levels); err != nil {
		return nil, err
	}
	fin := maps.Clone(levels)
	maps.DeleteFunc(fin, func(_ string, l int16) bool { return l == 0 })
	return &Set{release: rel, controller: controller, finalized: fin, epoch: epoch}, nil
}

func rangeOrNone(r Range, ok bool) string {
	if !ok {
		return "no level of it"
	}
	return "levels " + r.String()
}

// Release returns the release the set follows.
func (s *Set) Release() Release { return s.release }

// SetJournal has every later applied change told to fn (with the whole
// finalized set and its epoch); an error from it fails the update.
func (s *Set) SetJournal(fn func(Levels, int64) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal = fn
}

// Level returns the finalized level of name, 0 if it is not finalized.
func (s *Set) Level(name string) int16 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.finalized[name]
}

// Finalized returns a copy of the finalized levels and their epoch.
func (s *Set) Finalized() (Levels, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.finalized), s.epoch
}

// Each calls fn for every supported feature in name order, with its range
// and finalized level (0 when not finalized).
func (s *Set) Each(fn func(name string, r Range, level int16)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, name := range slices.Sorted(maps.Keys(s.release.Supported)) {
		fn(name, s.release.Supported[name], s.finalized[name])
	}
}

// Restore replaces the finalized levels and epoch with what the data
// directory kept (features-kept). A kept level the release does not
// support is an error, as a Kafka controller refuses to replay a
// FeatureLevelRecord outside its supported range (features-kept-checked):
// the directory was written under a newer --kafka-version.
func (s *Set) Restore(levels Levels, epoch int64) error {
	if err := s.release.check(levels); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finalized = maps.Clone(levels)
	maps.DeleteFunc(s.finalized, func(_ string, l int16) bool { return l == 0 })
	s.epoch = epoch
	return nil
}

// check reports the first level, by name, that rel does not support.
func (rel Release) check(levels Levels) error {
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		level := levels[name]
		r, ok := rel.Supported[name]
		if level != 0 && (!ok || !r.Contains(level)) {
			return fmt.Errorf("finalized %s level %d: Kafka %s supports %s", name, level, rel.Name, rangeOrNone(r, ok))
		}
	}
	return nil
}
