package group

import (
	"errors"
	"testing"
)

// seed-idempotent and seed-conflict for GROUP configs, validated as
// IncrementalAlterConfigs validates the resulting set (seed-validated).
func TestConfigStoreEnsure(t *testing.T) {
	s := NewConfigStore(DefaultShareConfig())
	if changed, err := s.Ensure("g", map[string]string{"share.auto.offset.reset": "earliest"}, true); err != nil || changed {
		t.Fatalf("validate only: %v %v", changed, err)
	}
	if got := s.Share("g").AutoOffsetReset; got != (ShareGroupConfig{}).AutoOffsetReset {
		t.Fatal("validate only changed the group")
	}
	if changed, err := s.Ensure("g", map[string]string{"share.auto.offset.reset": "earliest"}, false); err != nil || !changed {
		t.Fatalf("first: %v %v", changed, err)
	}
	if err := s.Replace("g", map[string]string{"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}, false); err != nil {
		t.Fatal(err)
	}
	// An override the seed does not name stays; the same value is no change.
	if changed, err := s.Ensure("g", map[string]string{"share.auto.offset.reset": "earliest"}, false); err != nil || changed {
		t.Fatalf("again: %v %v", changed, err)
	}
	if got := s.Share("g").DeliveryCountLimit; got != 3 {
		t.Fatalf("delivery count limit %d after the seed, want the 3 set since", got)
	}
	if _, err := s.Ensure("g", map[string]string{"share.auto.offset.reset": "latest"}, false); !errors.Is(err, ErrConfigConflict) {
		t.Fatalf("another value: %v, want ErrConfigConflict", err)
	}
	for name, cfg := range map[string]map[string]string{
		"unknown":           {"share.nope": "1"},
		"bad value":         {"share.isolation.level": "sometimes"},
		"session not above": {"share.session.timeout.ms": "1000", "share.heartbeat.interval.ms": "5000"},
	} {
		if _, err := s.Ensure("h", cfg, false); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := s.Ensure("", map[string]string{"share.auto.offset.reset": "earliest"}, false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty group ID: %v", err)
	}
}
