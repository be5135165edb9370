package telemetry

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// TestInstanceCacheBound: the cache keeps CacheMaxSize instances; one more
// forgets the least recently used, and a request keeps an instance recent
// (telemetry-instance-cache, Kafka's LRUCache of CACHE_MAX_SIZE).
func TestInstanceCacheBound(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	var forgotten [][16]byte
	m := New(Options{Clock: clock, Hooks: Hooks{Forgotten: func(c Client, _ time.Time) { forgotten = append(forgotten, c.InstanceID) }}})
	id := func(i int) [16]byte {
		var b [16]byte
		binary.BigEndian.PutUint64(b[8:], uint64(i)+2) // past the reserved IDs
		return b
	}
	now := clock.Now()
	for i := range CacheMaxSize {
		if _, err := m.Subscribe(Client{InstanceID: id(i)}, i, now); err != nil {
			t.Fatal(err)
		}
	}
	// Instance 0 asks again (throttled, but a request all the same), so
	// instance 1 is now the least recent.
	if _, err := m.Subscribe(Client{InstanceID: id(0)}, 0, now); !errors.Is(err, ErrThrottled) {
		t.Fatalf("second Get at once: %v, want ErrThrottled", err)
	}
	if _, err := m.Subscribe(Client{InstanceID: id(CacheMaxSize)}, CacheMaxSize, now); err != nil {
		t.Fatal(err)
	}
	if m.Instances() != CacheMaxSize || len(forgotten) != 1 || forgotten[0] != id(1) {
		t.Errorf("%d instances, forgotten %x; want %d and instance 1", m.Instances(), forgotten, CacheMaxSize)
	}
}

// TestMatchSelectors: a selector must match the whole attribute; every
// selector of a subscription must match; an absent attribute matches no
// selector (telemetry-match, ClientMetricsInstanceMetadata.isMatch).
func TestMatchSelectors(t *testing.T) {
	s, err := parseSubscription("s", map[string]string{ConfigMatch: "client_id = app-.* , client_software_name=kgo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		client Client
		want   bool
	}{
		{Client{ClientID: "app-1", SoftwareName: "kgo"}, true},
		{Client{ClientID: "my-app-1", SoftwareName: "kgo"}, false}, // the whole attribute
		{Client{ClientID: "app-1", SoftwareName: "kgo-fork"}, false},
		{Client{ClientID: "app-1", SoftwareName: "librdkafka"}, false},
	} {
		if got := s.matches(c.client); got != c.want {
			t.Errorf("%+v: %v, want %v", c.client, got, c.want)
		}
	}
	port, err := parseSubscription("p", map[string]string{ConfigMatch: "client_source_port=9\\d+"})
	if err != nil {
		t.Fatal(err)
	}
	if port.matches(Client{}) || !port.matches(Client{SourcePort: 9092}) {
		t.Error("port selector: an unknown port must not match, 9092 must")
	}
	// A later selector for the same attribute replaces the earlier one.
	twice, err := parseSubscription("t", map[string]string{ConfigMatch: "client_id=a,client_id=b"})
	if err != nil {
		t.Fatal(err)
	}
	if twice.matches(Client{ClientID: "a"}) || !twice.matches(Client{ClientID: "b"}) {
		t.Error("the later client_id selector must win")
	}
}
