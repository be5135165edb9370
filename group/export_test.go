package group

// What only tests call: the incremental form of a GROUP config change
// (the broker works out the increment itself and calls Replace), dropping
// a group's overrides, a share group's effective config and the GROUP
// config names.

import "fmt"

// Alter applies ops to groupID's overrides, all or nothing. The resulting
// set (existing overrides, changed by ops, defaults for the rest) is
// validated as a whole, so a change that makes the session timeout no
// longer exceed the heartbeat interval is refused. With validateOnly
// nothing is stored.
func (s *ConfigStore) Alter(groupID string, ops []ConfigOp, validateOnly bool) error {
	if groupID == "" {
		return fmt.Errorf("%w: group config resource name must not be empty", ErrInvalidRequest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]string)
	for k, v := range s.overrides[groupID] {
		next[k] = v
	}
	for _, op := range ops {
		if _, ok := s.knownConfig(op.Name); !ok {
			return configError("Unknown group config name: " + op.Name)
		}
		if op.Delete {
			delete(next, op.Name)
		} else {
			next[op.Name] = op.Value
		}
	}
	return s.commitLocked(groupID, next, validateOnly)
}

// Forget drops groupID's overrides.
func (s *ConfigStore) Forget(groupID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, had := s.overrides[groupID]; had && s.journal != nil {
		s.journal(groupID, nil)
	}
	delete(s.overrides, groupID)
}

// GroupConfigNames returns every valid GROUP config name, sorted.
func GroupConfigNames() []string {
	out := make([]string, len(groupConfigs))
	for i, d := range groupConfigs {
		out[i] = d.Name
	}
	return out
}

// EffectiveConfig returns group id's effective share config.
func (s *ShareGroups) EffectiveConfig(id string) ShareGroupConfig { return s.configs.Share(id) }
