// Package clientmetrics keeps what clients report about themselves through
// KIP-714 telemetry: each PushTelemetry's OTLP payload decoded with the
// OpenTelemetry protobuf module, and the latest value of every data point
// kept per client instance, bounded, until the instance stops pushing or
// says it is terminating (docs/telemetry.md).
//
// The package knows nothing of the Kafka protocol: the broker hands it a
// plain Client and the uncompressed payload (its telemetry Receiver), and
// the metrics and httpapi packages read Instances at scrape or request
// time. Time is the broker clock's, given with each push and read from
// the Clock for everything else, so a test moves it.
package clientmetrics

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// The bounds of a Store (client-metrics-bounds in docs/telemetry.md). A
// Limits field left zero takes these.
const (
	// DefaultMaxInstances is how many client instances are kept at once.
	// A push from a new instance when the store is full evicts the
	// instance that pushed least recently, as Kafka's client instance
	// cache is an LRU cache (ClientMetricsManager's LRUCache).
	DefaultMaxInstances = 128
	// DefaultMaxSeriesPerInstance is how many series (metric name and
	// data-point attributes) one instance keeps. A data point of a new
	// series beyond it is dropped and counted; the series already kept go
	// on being updated.
	DefaultMaxSeriesPerInstance = 512
)

// Bounds on what one series carries, so neither memory nor a scrape's
// label set grows with what a client puts in a payload.
const (
	// MaxAttributes is the number of attributes kept of one data point or
	// resource, the first in key order; the rest are dropped.
	MaxAttributes = 16
	// MaxValueLen is the longest attribute value kept, in bytes; a longer
	// one is cut (at a UTF-8 boundary) and ends in "…".
	MaxValueLen = 256
	// MaxNameLen is the longest metric name or attribute key accepted; a
	// metric with a longer name is dropped, an attribute with a longer key
	// too.
	MaxNameLen = 256
)

// The expiry of an instance that stops pushing (client-metrics-expiry):
// ExpiryIntervals push intervals after its last push, and never sooner than
// MinExpiry, as Kafka's ClientMetricsManager expires a client instance at
// max(60 s, 3 × push interval) after its last request.
const (
	ExpiryIntervals = 3
	MinExpiry       = 60 * time.Second
)

// Limits bound a Store; a zero field takes its default.
type Limits struct {
	MaxInstances         int
	MaxSeriesPerInstance int
}

func (l Limits) withDefaults() Limits {
	if l.MaxInstances <= 0 {
		l.MaxInstances = DefaultMaxInstances
	}
	if l.MaxSeriesPerInstance <= 0 {
		l.MaxSeriesPerInstance = DefaultMaxSeriesPerInstance
	}
	return l
}

// Client is who pushed: the client instance and what the broker knows of
// its connection. The broker fills it from the request and the connection.
type Client struct {
	InstanceID                              [16]byte
	ClientID, SoftwareName, SoftwareVersion string
	SourceAddress, Principal, Listener      string
	SourcePort                              int
}

// ErrInvalidPayload wraps why a payload was refused: it is not an OTLP
// metrics message. Nothing of it is kept. Kafka answers such a push
// INVALID_RECORD (ClientMetricsManager.processPushTelemetryRequest, when
// the receiver fails to export).
var ErrInvalidPayload = errors.New("client metrics payload is not OTLP metrics")

// Store is the client instances and their latest data points. It is safe
// for concurrent use.
type Store struct {
	clock locktimer.Clock
	lim   Limits

	mu        sync.Mutex
	instances map[[16]byte]*instance
	stats     Stats
	order     uint64 // pushes so far, for the LRU eviction (nextOrder)
}

// Stats are the store's own counts, for the metrics beside the clients'.
type Stats struct {
	// Evicted are the instances removed to make room for a new one at
	// MaxInstances.
	Evicted int64
	// Expired are the instances removed because they stopped pushing.
	Expired int64
	// DroppedPoints are the data points not kept: a new series beyond
	// MaxSeriesPerInstance, or a metric name longer than MaxNameLen.
	DroppedPoints int64
	// Invalid are the payloads refused as not OTLP metrics.
	Invalid int64
}

// New returns an empty store on clock within lim.
func New(clock locktimer.Clock, lim Limits) *Store {
	return &Store{clock: clock, lim: lim.withDefaults(), instances: make(map[[16]byte]*instance)}
}

// Limits are the store's bounds, defaults filled in.
func (s *Store) Limits() Limits { return s.lim }

// instance is one client instance's state.
type instance struct {
	client    Client
	interval  time.Duration
	first     time.Time
	last      time.Time // the broker clock at its latest push
	pushes    int64
	dropped   int64 // data points dropped at the series bound
	resource  []Attr
	series    map[string]*Series // by seriesKey
	lastOrder uint64             // pushes across the store, for the LRU eviction
}

// expires is when the instance ages out if it does not push again.
func (in *instance) expires() time.Time { return in.last.Add(expiry(in.interval)) }

// expiry is how long an instance pushing every interval is kept after its
// last push (client-metrics-expiry).
func expiry(interval time.Duration) time.Duration {
	return max(MinExpiry, ExpiryIntervals*interval)
}

// Receive decodes payload, an OTLP ExportMetricsServiceRequest, and keeps
// its data points as c's latest, c pushing every interval; now is the
// broker clock. It has the telemetry Receiver's shape. A payload that is not
// OTLP metrics returns an error wrapping ErrInvalidPayload and changes
// nothing; an empty payload refreshes the instance without data points.
func (s *Store) Receive(c Client, payload []byte, interval time.Duration, now time.Time) error {
	points, resource, err := decode(payload)
	if err != nil {
		s.mu.Lock()
		s.stats.Invalid++
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	in := s.instances[c.InstanceID]
	if in == nil {
		if len(s.instances) >= s.lim.MaxInstances {
			s.evictLocked()
		}
		in = &instance{first: now, series: make(map[string]*Series)}
		s.instances[c.InstanceID] = in
	}
	s.stats.DroppedPoints += int64(points.dropped)
	in.client, in.interval, in.last = c, interval, now
	in.pushes++
	in.lastOrder = s.nextOrder()
	if resource != nil {
		in.resource = resource
	}
	for i := range points.list {
		p := &points.list[i]
		key := p.key()
		cur := in.series[key]
		if cur == nil {
			if len(in.series) >= s.lim.MaxSeriesPerInstance {
				in.dropped++
				s.stats.DroppedPoints++
				continue
			}
			p.Series.Updated = now
			cp := p.Series
			in.series[key] = &cp
			continue
		}
		cur.merge(&p.Series, p.delta, now)
	}
	return nil
}

// order counts pushes across the store: the instance with the smallest
// lastOrder pushed least recently. A counter rather than the clock, so
// pushes at the same instant still have an order.
func (s *Store) nextOrder() uint64 {
	s.order++
	return s.order
}

// Terminated removes c's instance: the client said its push was its last
// (a terminating PushTelemetry), so nothing more will come from it.
func (s *Store) Terminated(c Client, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instances, c.InstanceID)
	s.expireLocked(now)
}

// evictLocked removes the instance that pushed least recently.
func (s *Store) evictLocked() {
	var oldest [16]byte
	var order uint64
	found := false
	for id, in := range s.instances {
		if !found || in.lastOrder < order {
			oldest, order, found = id, in.lastOrder, true
		}
	}
	if found {
		delete(s.instances, oldest)
		s.stats.Evicted++
	}
}

// expireLocked removes the instances whose expiry has passed at now.
func (s *Store) expireLocked(now time.Time) {
	for id, in := range s.instances {
		if !now.Before(in.expires()) {
			delete(s.instances, id)
			s.stats.Expired++
		}
	}
}

// Instance is one client instance as read: who it is, when it pushed, and
// its series sorted by name and attributes.
type Instance struct {
	Client   Client
	Interval time.Duration
	// FirstPush and LastPush are the broker clock at its first and latest
	// push; Expires is when it ages out unless it pushes again.
	FirstPush, LastPush, Expires time.Time
	Pushes                       int64
	// DroppedPoints are its data points not kept at the series bound.
	DroppedPoints int64
	// Resource is the latest resource's attributes, sorted by key.
	Resource []Attr
	Series   []Series
}

// Instances returns every instance not yet expired on the broker clock,
// sorted by instance ID, each a copy the caller may keep.
func (s *Store) Instances() []Instance {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	out := make([]Instance, 0, len(s.instances))
	for _, in := range s.instances {
		out = append(out, in.snapshot())
	}
	slices.SortFunc(out, func(a, b Instance) int {
		return slices.Compare(a.Client.InstanceID[:], b.Client.InstanceID[:])
	})
	return out
}

// Instance returns the instance id, false when it is not kept.
func (s *Store) Instance(id [16]byte) (Instance, bool) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	in := s.instances[id]
	if in == nil {
		return Instance{}, false
	}
	return in.snapshot(), true
}

// Len is the number of instances kept, expired ones included until the
// next read removes them. It takes the lock only: a scrape with no client
// costs this.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.instances)
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (in *instance) snapshot() Instance {
	out := Instance{Client: in.client, Interval: in.interval, FirstPush: in.first, LastPush: in.last,
		Expires: in.expires(), Pushes: in.pushes, DroppedPoints: in.dropped,
		Resource: slices.Clone(in.resource), Series: make([]Series, 0, len(in.series))}
	for _, sr := range in.series {
		out.Series = append(out.Series, sr.clone())
	}
	slices.SortFunc(out.Series, func(a, b Series) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), compareAttrs(a.Attrs, b.Attrs))
	})
	return out
}

// FormatInstanceID writes a client instance ID as Kafka writes a Uuid
// (Uuid.toString): URL-safe base64 without padding.
func FormatInstanceID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseInstanceID reads what FormatInstanceID writes.
func ParseInstanceID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("client instance ID %q is not a Kafka Uuid (22 characters of URL-safe base64)", s)
	}
	copy(id[:], b)
	return id, nil
}
