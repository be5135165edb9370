package telemetry

import (
	"slices"
	"testing"
	"time"
)

// TestSubscriptionIDAsKafka checks telemetry-subscription-id against values Kafka's
// own computation gives: ClientMetricsManager.computeSubscriptionId run
// in Java 17 (java.util.HashSet, java.util.zip.CRC32C, Uuid.hashCode) for
// the instance ID 0123456789abcdef-fedcba9876543210.
func TestSubscriptionIDAsKafka(t *testing.T) {
	id := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	for _, c := range []struct {
		metrics  []string
		interval time.Duration
		wantSet  []string
		want     int32
	}{
		{[]string{"*"}, 5 * time.Minute, []string{"*"}, 1012207395},
		{nil, 5 * time.Minute, nil, -725132322},
		{[]string{"org.apache.kafka.producer.", "org.apache.kafka.consumer.fetch.manager."}, time.Second,
			[]string{"org.apache.kafka.producer.", "org.apache.kafka.consumer.fetch.manager."}, 27277948},
		{[]string{"b", "a", "org.apache.kafka.client.", "zz", "c.d.e", "x", "y", "m", "n", "o", "p", "q", "r", "s", "ü"}, 30 * time.Second,
			[]string{"zz", "a", "b", "org.apache.kafka.client.", "m", "n", "o", "p", "q", "r", "s", "x", "c.d.e", "y", "ü"}, -1643134851},
	} {
		set := javaHashSetOrder(c.metrics)
		if !slices.Equal(set, c.wantSet) {
			t.Errorf("HashSet order of %q = %q, want %q", c.metrics, set, c.wantSet)
		}
		if got := subscriptionID(set, c.interval, id); got != c.want {
			t.Errorf("subscription ID of %q at %v = %d, want Kafka's %d", c.metrics, c.interval, got, c.want)
		}
	}
}

func TestJavaStringHash(t *testing.T) {
	// "hello".hashCode() and "ü".hashCode() in Java.
	if h := javaStringHash("hello"); h != 99162322 {
		t.Errorf("hello: %d", h)
	}
	if h := javaStringHash("ü"); h != 252 {
		t.Errorf("ü: %d", h)
	}
}
