// Package telemetry is the broker's side of client telemetry (KIP-714):
// the client instances that ask for a subscription
// (GetTelemetrySubscriptions) and push metrics (PushTelemetry), the
// CLIENT_METRICS subscriptions that say which metrics each client sends and
// how often, and the hand-off of each accepted payload to a Receiver. It
// follows Kafka's ClientMetricsManager, ClientMetricsInstance,
// ClientMetricsConfigs and ClientMetricsInstanceMetadata
// (docs/telemetry.md). It sees no wire types and no sockets: the broker
// translates requests into the calls below and the sentinel errors into
// Kafka's codes.
package telemetry

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
)

// Client is what the broker knows of a pushing client instance.
type Client struct {
	InstanceID                              [16]byte // the client instance ID (a UUID)
	ClientID, SoftwareName, SoftwareVersion string
	SourceAddress, Principal, Listener      string
	SourcePort                              int
}

// Receiver gets each accepted push: payload is the uncompressed OTLP
// ExportMetricsServiceRequest bytes; interval is the subscription's push
// interval; a non-nil error means the payload could not be decoded (the
// push is answered INVALID_RECORD, as Kafka answers a push its exporter
// cannot read).
type Receiver func(c Client, payload []byte, interval time.Duration, now time.Time) error

// Sentinel errors; the broker maps each to its Kafka code.
var (
	// ErrInvalidRequest: a push naming a reserved instance ID, or one after
	// the instance's terminating push (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("invalid telemetry request")
	// ErrThrottled: a request before the push interval passed
	// (THROTTLING_QUOTA_EXCEEDED).
	ErrThrottled = errors.New("telemetry request arrived before the next push interval")
	// ErrUnknownSubscription: a push naming another subscription ID than
	// the instance's current one (UNKNOWN_SUBSCRIPTION_ID).
	ErrUnknownSubscription = errors.New("unknown client subscription id")
	// ErrUnsupportedCompression: a compression type Kafka does not know
	// (UNSUPPORTED_COMPRESSION_TYPE).
	ErrUnsupportedCompression = errors.New("unknown telemetry compression type")
	// ErrTooLarge: a payload above telemetry.max.bytes, compressed or
	// not (TELEMETRY_TOO_LARGE).
	ErrTooLarge = errors.New("telemetry payload larger than telemetry.max.bytes")
	// ErrInvalidRecord: the payload could not be decompressed or the
	// Receiver could not decode it (INVALID_RECORD).
	ErrInvalidRecord = errors.New("telemetry payload could not be read")
	// ErrInvalidConfig: a CLIENT_METRICS match pattern Kafka refuses
	// (INVALID_CONFIG).
	ErrInvalidConfig = errors.New("invalid client metrics configuration")
	// ErrInvalidConfigRequest: a CLIENT_METRICS change Kafka answers
	// INVALID_REQUEST: an empty name, an unknown config, an interval out
	// of bounds.
	ErrInvalidConfigRequest = errors.New("invalid client metrics configuration request")
)

// Kafka's bounds and defaults (ClientMetricsManager, MetricConfigs).
const (
	// DefaultMaxBytes is telemetry.max.bytes' default.
	DefaultMaxBytes = 1 << 20
	// CacheMaxSize bounds the client instances kept, least recently used
	// first out (ClientMetricsManager.CACHE_MAX_SIZE).
	CacheMaxSize = 16384
	// CacheExpiry is the shortest time an instance is kept after its last
	// request; an instance with a push interval above a third of it is
	// kept three intervals (ClientMetricsManager.DEFAULT_CACHE_EXPIRY_MS).
	CacheExpiry = time.Minute
)

// AcceptedCompression are the compression types offered to clients, in
// Kafka's order of preference (ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES):
// zstd, lz4, gzip, snappy.
var AcceptedCompression = []int8{4, 3, 1, 2}

// Options configure a Manager.
type Options struct {
	// Clock is the broker's clock; Instances reads it. Every other call
	// is given the broker's time.
	Clock locktimer.Clock
	// MaxBytes is telemetry.max.bytes; zero means DefaultMaxBytes.
	MaxBytes int
	// Default, when not nil, is the subscription every client gets while
	// no CLIENT_METRICS subscription exists (telemetry-default-subscription).
	Default *Default
	Hooks
	// newID, nil outside tests, makes new client instance IDs.
	newID func() [16]byte
}

// Hooks are what the broker's embedder hears of the client instances.
type Hooks struct {
	// Receiver gets each accepted push; nil drops them.
	Receiver Receiver
	// Terminated, if set, is called after a terminating push was accepted.
	Terminated func(c Client, now time.Time)
	// Forgotten, if set, is called when an instance leaves the broker's
	// cache: expired, evicted, or its connection closed. It is called with
	// the Manager's lock held, so it must not call back into it.
	Forgotten func(c Client, now time.Time)
}

// Default is the built-in subscription: every metric (DefaultMetrics) at
// Interval.
type Default struct {
	Interval time.Duration
}

// Manager keeps the client instances and the subscriptions. It is safe
// for concurrent use.
type Manager struct {
	opts  Options
	clock locktimer.Clock

	mu sync.Mutex
	// subs are the CLIENT_METRICS resources by name, with their raw
	// configs as set.
	subs map[string]*subscription
	// version counts subscription changes; an instance made under an older
	// one is re-evaluated at its next request (Kafka's
	// subscriptionUpdateVersion).
	version   int
	instances map[[16]byte]*list.Element // of *instance
	lru       list.List                  // front: most recently used
	byConn    map[any][16]byte           // the connection that made each instance
	// nextExpiry is no later than the earliest deadline of any instance:
	// before it, no instance can have expired and nothing is scanned.
	nextExpiry time.Time
	// journal, nil without a data directory, is told every subscription
	// change (SetJournal).
	journal func(name string, configs map[string]string)
}

// instance is one client instance (Kafka's ClientMetricsInstance).
type instance struct {
	client         Client
	conn           any
	subscriptionID int32
	version        int
	metrics        []string
	interval       time.Duration
	lastGet        time.Time // zero: never
	lastPush       time.Time
	lastErr        error
	terminating    bool
	lastSeen       time.Time
}

// New returns a Manager with no subscriptions and no instances.
func New(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = locktimer.RealClock{}
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.newID == nil {
		opts.newID = randomID
	}
	return &Manager{
		opts:      opts,
		clock:     opts.Clock,
		subs:      make(map[string]*subscription),
		instances: make(map[[16]byte]*list.Element),
		byConn:    make(map[any][16]byte),
	}
}

// Subscription is the answer to GetTelemetrySubscriptions.
type Subscription struct {
	InstanceID          [16]byte
	SubscriptionID      int32
	AcceptedCompression []int8
	PushInterval        time.Duration
	MaxBytes            int32
	DeltaTemporality    bool
	// Metrics are the requested metric name prefixes: empty for none,
	// ["*"] for all (as Kafka sends it).
	Metrics []string
}

// Subscribe answers GetTelemetrySubscriptions: c.InstanceID zero asks for
// a new instance ID (telemetry-instance-id). conn is the connection the
// request came on (any comparable value); when it closes, ConnClosed
// forgets the instances it made. A second request within the push
// interval is ErrThrottled, unless the last push failed with
// ErrUnknownSubscription or ErrUnsupportedCompression (telemetry-throttle).
func (m *Manager) Subscribe(c Client, conn any, now time.Time) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.InstanceID == ([16]byte{}) {
		c.InstanceID = m.freshID()
	}
	in := m.instanceLocked(c, conn, now)
	since := in.lastGet
	if in.lastPush.After(since) {
		since = in.lastPush
	}
	if since.IsZero() || now.Sub(since) >= in.interval {
		in.lastGet = now
	} else if !errors.Is(in.lastErr, ErrUnknownSubscription) && !errors.Is(in.lastErr, ErrUnsupportedCompression) {
		return Subscription{}, fmt.Errorf("%w: client instance %s asked again %v after its last request, within its push interval %v",
			ErrThrottled, UUIDString(c.InstanceID), now.Sub(since), in.interval)
	}
	// A Get answered early, after a failed push, does not count as one:
	// Kafka moves the timestamp only when the interval passed, so the next
	// push still waits for it (maybeUpdateGetRequestTimestamp).
	in.lastErr = nil
	return Subscription{
		InstanceID:          c.InstanceID,
		SubscriptionID:      in.subscriptionID,
		AcceptedCompression: AcceptedCompression,
		PushInterval:        in.interval,
		MaxBytes:            int32(min(m.opts.MaxBytes, 1<<31-1)),
		DeltaTemporality:    true,
		Metrics:             in.metrics,
	}, nil
}

// Push is one PushTelemetry request.
type Push struct {
	SubscriptionID int32
	Terminating    bool
	Compression    int8
	Metrics        []byte
}

// Push answers PushTelemetry for the instance c.InstanceID names, checked
// in Kafka's order (ClientMetricsManager.validatePushRequest): after a
// terminating push nothing more is taken; a push within the push interval
// is throttled unless it is the first since a Subscribe or terminating;
// the subscription ID must be the current one; the compression type
// known; the payload within MaxBytes before and after decompression. An
// accepted non-empty payload goes to the Receiver, decompressed.
func (m *Manager) Push(c Client, conn any, p Push, now time.Time) error {
	if isReserved(c.InstanceID) {
		return fmt.Errorf("%w: invalid client instance id %s", ErrInvalidRequest, UUIDString(c.InstanceID))
	}
	m.mu.Lock()
	in := m.instanceLocked(c, conn, now)
	err := m.checkPushLocked(in, p, now)
	// Kafka records the flag whatever the outcome (the finally block of
	// processPushTelemetryRequest).
	in.terminating = p.Terminating
	in.lastErr = err
	client, interval := in.client, in.interval
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if len(p.Metrics) > 0 {
		if err := m.deliver(client, p, interval, now); err != nil {
			m.mu.Lock()
			in.lastErr = err
			m.mu.Unlock()
			return err
		}
	}
	if p.Terminating && m.opts.Terminated != nil {
		m.opts.Terminated(client, now)
	}
	return nil
}

func (m *Manager) checkPushLocked(in *instance, p Push, now time.Time) error {
	id := UUIDString(in.client.InstanceID)
	if in.terminating {
		return fmt.Errorf("%w: client %s sent a terminating push before; no request is taken after it", ErrInvalidRequest, id)
	}
	// The first push after a Subscribe may come early: clients jitter it
	// between half and one and a half intervals
	// (ClientMetricsInstance.maybeUpdatePushRequestTimestamp).
	accept := in.lastGet.After(in.lastPush) || in.lastPush.IsZero() || now.Sub(in.lastPush) >= in.interval
	if accept {
		in.lastPush = now
	} else if !p.Terminating {
		return fmt.Errorf("%w: client %s pushed %v after its last push, within its push interval %v", ErrThrottled, id, now.Sub(in.lastPush), in.interval)
	}
	if p.SubscriptionID != in.subscriptionID {
		return fmt.Errorf("%w: client %s sent subscription id %d", ErrUnknownSubscription, id, p.SubscriptionID)
	}
	if p.Compression < 0 || p.Compression > 4 {
		return fmt.Errorf("%w: client %s sent compression type %d", ErrUnsupportedCompression, id, p.Compression)
	}
	if len(p.Metrics) > m.opts.MaxBytes {
		return fmt.Errorf("%w: client %s sent %d bytes; telemetry.max.bytes is %d", ErrTooLarge, id, len(p.Metrics), m.opts.MaxBytes)
	}
	return nil
}

// deliver decompresses the payload and hands it to the Receiver.
func (m *Manager) deliver(c Client, p Push, interval time.Duration, now time.Time) error {
	payload, err := storage.Decompress(p.Compression, p.Metrics)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	// Kafka's newest ClientMetricsManager answers TELEMETRY_TOO_LARGE when
	// the exporter finds the decompressed payload above the limit.
	if len(payload) > m.opts.MaxBytes {
		return fmt.Errorf("%w: %d bytes decompressed; telemetry.max.bytes is %d", ErrTooLarge, len(payload), m.opts.MaxBytes)
	}
	if m.opts.Receiver == nil {
		return nil
	}
	if err := m.opts.Receiver(c, payload, interval, now); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	return nil
}

// instanceLocked returns the instance c.InstanceID names, made if absent
// or expired and re-evaluated if the subscriptions changed since it was
// made; either way it is the most recently used, and its expiry moves.
func (m *Manager) instanceLocked(c Client, conn any, now time.Time) *instance {
	m.expireLocked(now)
	var in *instance
	if e, ok := m.instances[c.InstanceID]; ok && now.Before(e.Value.(*instance).deadline()) {
		in = e.Value.(*instance)
		m.lru.MoveToFront(e)
		if in.version < m.version {
			// The client keeps what it was when it was first seen;
			// throttling starts over, so the client gets its new
			// subscription at once; the connection asking now is the
			// one whose close forgets it (createClientInstanceAndUpdateCache).
			fresh := m.evaluateLocked(in.client)
			if id, ok := m.byConn[in.conn]; ok && id == c.InstanceID {
				delete(m.byConn, in.conn)
			}
			fresh.conn = conn
			m.byConn[conn] = c.InstanceID
			e.Value = fresh
			in = fresh
		}
	} else {
		if ok {
			m.dropLocked(e.Value.(*instance), now) // expired at this very instant
		}
		in = m.evaluateLocked(c)
		in.conn = conn
		m.instances[c.InstanceID] = m.lru.PushFront(in)
		m.byConn[conn] = c.InstanceID
		if m.lru.Len() > CacheMaxSize {
			oldest := m.lru.Back()
			m.dropLocked(oldest.Value.(*instance), now)
		}
	}
	in.lastSeen = now
	if at := in.deadline(); m.nextExpiry.IsZero() || at.Before(m.nextExpiry) {
		m.nextExpiry = at
	}
	return in
}

// evaluateLocked makes an instance for c under the current subscriptions
// (ClientMetricsManager.createClientInstance).
func (m *Manager) evaluateLocked(c Client) *instance {
	metrics, interval := m.matchLocked(c)
	return &instance{
		client:         c,
		version:        m.version,
		metrics:        metrics,
		interval:       interval,
		subscriptionID: subscriptionID(metrics, interval, c.InstanceID),
	}
}

// deadline is when the instance expires unless a request comes first.
func (in *instance) deadline() time.Time { return in.lastSeen.Add(max(CacheExpiry, 3*in.interval)) }

// dropLocked removes an instance and tells Forgotten.
func (m *Manager) dropLocked(in *instance, now time.Time) {
	e, ok := m.instances[in.client.InstanceID]
	if !ok {
		return
	}
	m.lru.Remove(e)
	delete(m.instances, in.client.InstanceID)
	if id, ok := m.byConn[in.conn]; ok && id == in.client.InstanceID {
		delete(m.byConn, in.conn)
	}
	if m.opts.Forgotten != nil {
		m.opts.Forgotten(in.client, now)
	}
}

// expireLocked drops the instances whose deadline has passed. Expiry is
// noticed, on the broker clock, at the next call into the Manager rather
// than by a timer of its own: a timer would be one more pending callback
// on a test's manual clock, which tests count. The scan runs only once
// some deadline may have passed, and finds the next one.
func (m *Manager) expireLocked(now time.Time) {
	if m.nextExpiry.IsZero() || now.Before(m.nextExpiry) {
		return
	}
	m.nextExpiry = time.Time{}
	for e := m.lru.Back(); e != nil; {
		prev := e.Prev()
		in := e.Value.(*instance)
		if at := in.deadline(); !now.Before(at) {
			m.dropLocked(in, now)
		} else if m.nextExpiry.IsZero() || at.Before(m.nextExpiry) {
			m.nextExpiry = at
		}
		e = prev
	}
}

// Expire forgets the instances whose deadline has passed at now, telling
// Forgotten; other calls do it too, as they come.
func (m *Manager) Expire(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(now)
}

// ConnClosed forgets the instance the connection made, as Kafka's
// ClientMetricsManager does when a connection disconnects.
func (m *Manager) ConnClosed(conn any, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(now)
	id, ok := m.byConn[conn]
	if !ok {
		return
	}
	delete(m.byConn, conn)
	if e, ok := m.instances[id]; ok {
		m.dropLocked(e.Value.(*instance), now)
	}
}

// Instances reports how many client instances are kept, the expired
// ones forgotten first.
func (m *Manager) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.clock.Now())
	return m.lru.Len()
}

// freshID makes an instance ID no kept instance has (generateNewClientId).
func (m *Manager) freshID() [16]byte {
	for {
		id := m.opts.newID()
		if _, taken := m.instances[id]; !taken && !isReserved(id) {
			return id
		}
	}
}

// randomID is a version-4 UUID whose base64 form does not start with '-',
// as Kafka's Uuid.randomUuid makes them (a leading '-' reads as a
// command-line flag).
func randomID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if !isReserved(id) && UUIDString(id)[0] != '-' {
			return id
		}
	}
}

// isReserved: Kafka's Uuid.RESERVED, the zero UUID and the metadata
// topic's ID (one).
func isReserved(id [16]byte) bool {
	var one [16]byte
	one[15] = 1
	return id == [16]byte{} || id == one
}

// UUIDString is a UUID as Kafka prints it: URL-safe base64 without padding.
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
