// Package faults keeps the faults a test arms through the test API and
// decides which request each one takes. A fault applies to the next N
// requests of one API key (optionally only those naming a topic or a
// group) and does one of three things to a request it takes:
//
//   - error: the request is answered with a Kafka error code without
//     reaching its handler, so the state change the error claims failed
//     did not happen (a produce answered NOT_LEADER_OR_FOLLOWER appended
//     nothing);
//   - latency: the request waits that long on real time, then is handled
//     normally;
//   - drop: the connection closes instead of answering.
//
// The package knows API keys as numbers and requests by the topic and
// group names they carry; the broker extracts those names from a request,
// says which keys it serves, and does what a taken fault says (builds the
// error response, waits, closes). It sees no kmsg and no sockets.
package faults

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MaxLatency bounds an injected delay: it must stay below the clients'
// request timeouts, or the test measures the client instead of the broker.
const MaxLatency = 30 * time.Second

// MaxCount bounds how many requests one fault applies to.
const MaxCount = 1_000_000

// Spec is a fault as a test asks for it, before validation. Exactly one of
// ErrorCode (non-zero), Latency and Drop must be set.
type Spec struct {
	APIKey    *int16 // required
	Count     int    // requests it applies to; 0 means 1
	Topic     string // "" matches any request
	Group     string // "" matches any request
	ErrorCode int16
	Latency   string // a Go duration, above 0 and at most MaxLatency
	Drop      bool
}

// Fault is one validated fault. A Fault returned by Store is a copy: its
// Remaining is what was left when it was copied.
type Fault struct {
	ID        int64 // given by Store.Add; 0 before
	APIKey    int16
	API       string // the key's name, as APIs.Name gives it
	Topic     string // "" matches any request
	Group     string // "" matches any request
	ErrorCode int16
	Latency   time.Duration
	Drop      bool
	Remaining int // requests it still applies to
}

// APIs is what validation needs to know about API keys from the broker,
// which owns the dispatch table and the Kafka messages.
type APIs interface {
	// Served reports whether the broker handles key.
	Served(key int16) bool
	// Name is key's name, for answers and messages.
	Name(key int16) string
	// HasErrorCode reports whether key's response has an error code a
	// fault can set.
	HasErrorCode(key int16) bool
}

// New validates in against apis and returns the fault it asks for; an
// error says what is wrong with in.
func New(in Spec, apis APIs) (Fault, error) {
	if in.APIKey == nil {
		return Fault{}, errors.New("api_key is required")
	}
	key := *in.APIKey
	if !apis.Served(key) {
		return Fault{}, fmt.Errorf("api_key %d: not an API this broker serves", key)
	}
	f := Fault{APIKey: key, API: apis.Name(key), Topic: in.Topic, Group: in.Group, ErrorCode: in.ErrorCode, Drop: in.Drop, Remaining: in.Count}
	if f.Remaining == 0 {
		f.Remaining = 1
	}
	if f.Remaining < 0 || f.Remaining > MaxCount {
		return Fault{}, fmt.Errorf("count %d: want 1 to %d", in.Count, MaxCount)
	}
	kinds := 0
	if in.ErrorCode != 0 {
		kinds++
		if !apis.HasErrorCode(key) {
			return Fault{}, fmt.Errorf("api_key %d (%s): its response has no error code to set", key, f.API)
		}
	}
	if in.Latency != "" {
		kinds++
		d, err := time.ParseDuration(in.Latency)
		if err != nil || d <= 0 || d > MaxLatency {
			return Fault{}, fmt.Errorf("latency %q: want a Go duration above 0 and at most %v", in.Latency, MaxLatency)
		}
		f.Latency = d
	}
	if in.Drop {
		kinds++
	}
	if kinds != 1 {
		return Fault{}, errors.New("want exactly one of error_code (non-zero), latency and drop")
	}
	return f, nil
}

// Store is the set of armed faults, in the order they were armed; the
// first match takes a request. The zero Store is empty and ready. It is
// safe for concurrent use.
type Store struct {
	armed  atomic.Int32 // len(list): lets requests skip the lock when idle
	mu     sync.Mutex   // guards the fields below and each listed fault's Remaining
	list   []*Fault
	nextID int64
}

// Add arms f with the next ID and returns it as armed.
func (s *Store) Add(f Fault) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	f.ID = s.nextID
	s.list = append(s.list, &f)
	s.armed.Store(int32(len(s.list)))
	return f
}

// Take returns a copy of the first fault that matches a request of
// apiKey and uses up one of its requests, or nil when none matches. names
// returns the topics and groups the request names; it is called at most
// once, and only when a fault of apiKey is limited to a topic or group, so
// a request pays for finding its names only then.
func (s *Store) Take(apiKey int16, names func() (topics, groups []string)) *Fault {
	if s.armed.Load() == 0 {
		return nil
	}
	var topics, groups []string
	named := false
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.list {
		if f.APIKey != apiKey {
			continue
		}
		if (f.Topic != "" || f.Group != "") && !named {
			topics, groups = names()
			named = true
		}
		if f.Topic != "" && !slices.Contains(topics, f.Topic) || f.Group != "" && !slices.Contains(groups, f.Group) {
			continue
		}
		f.Remaining--
		taken := *f
		if f.Remaining == 0 {
			s.list = slices.Delete(s.list, i, i+1)
			s.armed.Store(int32(len(s.list)))
		}
		return &taken
	}
	return nil
}

// Snapshot lists the armed faults in the order they were armed.
func (s *Store) Snapshot() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fault, 0, len(s.list))
	for _, f := range s.list {
		out = append(out, *f)
	}
	return out
}

// Clear disarms every fault and returns how many there were.
func (s *Store) Clear() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.list)
	s.list = nil
	s.armed.Store(0)
	return n
}
