package group

import (
	"errors"
	"testing"
)

// KIP-1191's GROUP configs: only a "__" name (after trimming, as Kafka's
// ConfigDef trims strings) and a non-boolean flag are refused; Share
// resolves the trimmed name and the flag, blank meaning no queue.
func TestDeadLetterConfigs(t *testing.T) {
	s := NewConfigStore(DefaultShareConfig())
	for _, tc := range []struct {
		name, value string
		bad         bool
	}{
		{"errors.deadletterqueue.topic.name", "__consumer_offsets", true},
		{"errors.deadletterqueue.topic.name", "  __x", true},
		{"errors.deadletterqueue.topic.name", "_x", false},
		{"errors.deadletterqueue.topic.name", "orders.dead", false}, // the prefix is checked on write
		{"errors.deadletterqueue.copy.record.enable", "maybe", true},
		{"errors.deadletterqueue.copy.record.enable", " True ", false},
	} {
		err := s.Alter("g", []ConfigOp{{Name: tc.name, Value: tc.value}}, true)
		if tc.bad != errors.Is(err, ErrInvalidConfig) || !tc.bad && err != nil {
			t.Errorf("%s=%q: %v", tc.name, tc.value, err)
		}
	}
	if c := s.Share("g").DeadLetter; c.Enabled() || c.CopyRecord {
		t.Fatalf("default: %+v", c)
	}
	if err := s.Alter("g", []ConfigOp{
		{Name: "errors.deadletterqueue.topic.name", Value: " dlq.g "},
		{Name: "errors.deadletterqueue.copy.record.enable", Value: "TRUE"},
	}, false); err != nil {
		t.Fatal(err)
	}
	if c := s.Share("g").DeadLetter; c != (DeadLetterConfig{Topic: "dlq.g", CopyRecord: true}) {
		t.Fatalf("resolved %+v", c)
	}
	if err := s.Alter("g", []ConfigOp{{Name: "errors.deadletterqueue.topic.name", Value: ""}}, false); err != nil {
		t.Fatal(err)
	}
	if s.Share("g").DeadLetter.Enabled() {
		t.Fatal("a blank name still names a queue")
	}
}
