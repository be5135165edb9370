package group

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrConfigConflict: a GROUP config given at start differs from the one
// the group holds already (docs/seeding.md seed-conflict). Nothing on the
// wire answers it; the broker refuses to start.
var ErrConfigConflict = errors.New("group config differs from the one kept")

// Ensure is GROUP configs given at start (docs/seeding.md): it adds
// configs to groupID's overrides, as IncrementalAlterConfigs SETs them,
// the resulting set validated as a whole (Replace's checks: names, values,
// the session timeouts above the heartbeat intervals). An override held
// already with the same value changes nothing (seed-idempotent); one held
// with another value is ErrConfigConflict naming both (seed-conflict), and
// nothing changes. Overrides configs does not name stay. changed reports
// whether the group's overrides changed; with validateOnly nothing does.
func (s *ConfigStore) Ensure(groupID string, configs map[string]string, validateOnly bool) (changed bool, err error) {
	if groupID == "" {
		return false, fmt.Errorf("%w: group config resource name must not be empty", ErrInvalidRequest)
	}
	names := slices.Sorted(maps.Keys(configs))
	for _, k := range names {
		if _, ok := s.knownConfig(k); !ok {
			return false, configError("Unknown group config name: " + k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.overrides[groupID]
	next := maps.Clone(current)
	if next == nil {
		next = make(map[string]string, len(configs))
	}
	for _, k := range names {
		if have, ok := current[k]; ok && have != configs[k] {
			return false, fmt.Errorf("%w: %s is %s, not %s", ErrConfigConflict, k, have, configs[k])
		}
		next[k] = configs[k]
	}
	if maps.Equal(next, current) {
		// Kept from before and valid then; checked again in case the
		// broker's bounds moved since (a value outside them is refused
		// here as an alter would refuse it).
		return false, s.validate(next)
	}
	if err := s.commitLocked(groupID, next, validateOnly); err != nil {
		return false, err
	}
	return !validateOnly, nil
}
