package refusal

import (
	"errors"
	"fmt"
	"testing"
)

// The text is Kafka's message alone, and the sentinel is found through
// further wrapping.
func TestRefusalKeepsMessageAndSentinel(t *testing.T) {
	sentinel := errors.New("invalid config")
	err := fmt.Errorf("topic t: %w", New(sentinel, "Invalid value x for configuration y"))
	if !errors.Is(err, sentinel) {
		t.Fatal("errors.Is does not find the sentinel")
	}
	var r refusal
	if !errors.As(err, &r) || r.Error() != "Invalid value x for configuration y" {
		t.Fatalf("message %q", r.Error())
	}
	if err := New(nil, "Empty key"); err.Error() != "Empty key" || errors.Unwrap(err) != nil {
		t.Fatalf("without a sentinel: %q wraps %v", err, errors.Unwrap(err))
	}
}
