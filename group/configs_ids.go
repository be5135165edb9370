package group

import (
	"maps"
	"slices"
)

// IDs lists the group IDs with GROUP configs set, sorted: the GROUP
// resources ListConfigResources v1 lists.
func (s *ConfigStore) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(s.overrides)) {
		if len(s.overrides[id]) > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
