package broker

import (
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/persist"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
)

// shareBinding is the share-partition registry as persist restores and
// journals it (docs/durability.md share-state-as-kafka). It only renames
// keys between shareserve and durable.
type shareBinding struct{ *shareserve.Service }

// SetShareJournal makes every share partition created from now on write
// its changes to j.
func (s shareBinding) SetShareJournal(j persist.ShareJournal) { s.SetJournal(shareJournal{j}) }

// shareJournal is persist's journal keyed as shareserve keys.
type shareJournal struct{ j persist.ShareJournal }

func shareKey(k shareserve.Key) durable.ShareKey {
	return durable.ShareKey{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

func (s shareJournal) SharePersisted(k shareserve.Key, st sharepartition.Persisted) {
	s.j.SharePersisted(shareKey(k), st)
}

func (s shareJournal) ShareDropped(k shareserve.Key) { s.j.ShareDropped(shareKey(k)) }
