package storage

import (
	"fmt"
	"maps"
	"slices"
)

// EnsureTopic is a topic given at start (docs/seeding.md): it creates the
// topic as CreateTopic does unless one of that name exists, and then
// checks the one there against what is asked. An existing topic with the
// same partition count and, for each property in configs, the same
// override is left alone (seed-idempotent: a restart on a data directory
// finds what the first start made); any other is refused with an error
// wrapping ErrTopicExists that says what differs (seed-conflict).
// Overrides configs does not name are not compared: a topic's other
// settings are its own. With validateOnly nothing is created. The name
// and count are checked first, as CreateTopics checks them, so a bad item
// is refused for what it is and not as a conflict.
func (s *Store) EnsureTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (created bool, err error) {
	if err := checkNewTopic(name, partitions); err != nil {
		return false, err
	}
	t := s.Topic(name)
	if t == nil {
		if validateOnly {
			return false, nil
		}
		if _, err := s.CreateTopic(name, partitions, configs); err != nil {
			return false, err
		}
		return true, nil
	}
	if have := int32(len(t.Partitions())); have != partitions {
		return false, fmt.Errorf("%w with %d partitions, not %d", ErrTopicExists, have, partitions)
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		have, ok := t.Config(k)
		switch {
		case !ok:
			return false, fmt.Errorf("%w without an override of %s, not with %s=%s", ErrTopicExists, k, k, configs[k])
		case have != configs[k]:
			return false, fmt.Errorf("%w with %s=%s, not %s", ErrTopicExists, k, have, configs[k])
		}
	}
	return false, nil
}
