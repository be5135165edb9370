package shareserve

import (
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
)

// deadLetterHook is the share partition's OnDeadLetter for key: nil unless
// the group names a dead-letter topic and the broker writes dead letters,
// so a group without a dead-letter queue pays one nil check per archive.
// The config is captured here; a changed group config installs a new hook
// through GroupConfigChanged.
func (s *Service) deadLetterHook(key Key, cfg group.DeadLetterConfig) func([]sharepartition.DeadLetter) {
	if s.deadLetter == nil || !cfg.Enabled() {
		return nil
	}
	write := s.deadLetter
	return func(dead []sharepartition.DeadLetter) { write(key, cfg, dead) }
}
