// Package sharebrokertest starts a sharebroker inside a Go test: a real
// Kafka-protocol broker on a loopback port, on a clock the test moves.
//
//	b := sharebrokertest.Start(t, sharebrokertest.WithProperty("num.partitions", "3"))
//	cl, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ShareGroup("g"), kgo.ConsumeTopics("jobs"))
//	...
//	b.Advance(30 * time.Second) // acquisition locks expire now, without sleeping
//	window, _ := b.ShareGroup("g")
//	story, _ := b.RecordStory("g", "jobs", 0, 42) // what happened to offset 42
//
// Share groups start at the log end: share.auto.offset.reset is latest,
// Kafka's default, so a share consumer that joins after the test produced
// gets none of those records and waits for new ones. To start a group at
// the earliest offset, give Start the group config (and, if you like, the
// topic; docs/seeding.md):
//
//	b := sharebrokertest.Start(t,
//		sharebrokertest.WithTopic("jobs", 1),
//		sharebrokertest.WithGroupConfig("g", "share.auto.offset.reset", "earliest"))
//
// The broker stops when the test ends. If the test failed, its log gets a
// short report first (Broker.Report): each share group's members and, per
// share partition, SPSO, SPEO, lag, the in-flight ranges and the latest
// record stories — what happened to each recently touched offset, in
// order, on the broker clock (docs/share-groups.md record-story). Every
// list in it is bounded; WithoutFailureReport turns it off.
//
// On the manual clock a fetch that finds nothing waits until records
// arrive or the test advances the clock past its MaxWaitMs. Clients keep a
// fetch waiting after each poll (kgo also queues share acknowledgements
// behind it), so advance the clock a little to let a parked fetch answer,
// and expect a record freed by a release or a lock expiry to go to a
// client's parked fetch first.
package sharebrokertest

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/telemetry"
)

// DefaultStart is where the clock of a started broker begins, unless
// WithStartTime says otherwise: a fixed time, so tests are reproducible.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Option changes how Start configures the broker.
type Option func(*settings)

type settings struct {
	props     map[string]string
	http      bool
	start     time.Time
	realClock bool
	logger    *slog.Logger
	nodes     int
	users     []broker.SASLUser
	noReport  bool
	testAPI   bool
	seed      broker.Seed
	telemetry telemetry.Hooks
	// seedErr is the first bad seed option; Start fails the test with it.
	seedErr error
}

// WithProperty sets a Kafka property, as --config NAME=VALUE does; Start
// fails the test if the broker rejects it.
func WithProperty(name, value string) Option {
	return func(s *settings) { s.props[name] = value }
}

// WithKafkaVersion makes the broker the Kafka release v ("4.0" to "4.4"),
// as --kafka-version does: ApiVersions advertises that release's API
// versions, and the cluster starts at its feature levels
// (docs/features.md). Start fails the test for another value.
func WithKafkaVersion(v string) Option { return WithProperty(broker.KafkaVersionProperty, v) }

// WithHTTP starts the metrics, health and inspection server on a free
// loopback port (Broker.HTTPAddr).
func WithHTTP() Option { return func(s *settings) { s.http = true } }

// WithTestAPI also serves the test control API under /v1/test/ on the
// HTTP server (as --enable-test-api does), and with it the console's
// actions; it implies WithHTTP. Its clock advance moves the test's clock.
func WithTestAPI() Option { return func(s *settings) { s.http, s.testAPI = true, true } }

// WithStartTime starts the broker's manual clock at t (not used with
// WithRealClock).
func WithStartTime(t time.Time) Option { return func(s *settings) { s.start = t } }

// WithRealClock runs the broker on real time, which Advance can still move
// forward (as the HTTP test API's clock advance does). Use it for clients
// that park long fetches and expect the broker to answer when their wait
// runs out (librdkafka, kafka-python, kafkajs): on the manual clock such a
// fetch waits until the test advances the clock. Broker.Clock is nil then.
func WithRealClock() Option { return func(s *settings) { s.realClock = true } }

// WithLogger sends the broker's logs to l; by default warnings and errors
// go to the test's log.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithNodes runs n nodes in the one process (broker.Config.Nodes), each
// on its own free loopback port; Broker.Addr is node 0's and
// Broker.NodeAddrs lists them all.
func WithNodes(n int) Option { return func(s *settings) { s.nodes = n } }

// WithSASLUser adds a SASL user with password, who can authenticate with
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on a SASL listener (add one with
// WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0")
// and find it with Broker().ListenerAddr("SASL_PLAINTEXT")).
func WithSASLUser(name, password string) Option {
	return func(s *settings) { s.users = append(s.users, broker.SASLUser{Name: name, Password: password}) }
}

// Broker is a running broker of a test.
type Broker struct {
	// Addr is the bootstrap address, host:port on 127.0.0.1.
	Addr string
	// NodeAddrs are the addresses of every node, in node ID order; the
	// first is Addr.
	NodeAddrs []string
	// HTTPAddr is the HTTP server's address, empty without WithHTTP.
	HTTPAddr string
	// Clock is the broker's clock; it moves only when the test moves it.
	// It is nil under WithRealClock.
	Clock *locktimer.ManualClock

	b     *broker.Broker
	clock advancer
	t     testing.TB
}

// advancer is a clock a test can move forward: the manual clock, or real
// time plus an offset. Advance refuses to pass locktimer.MaxTime.
type advancer interface {
	locktimer.Clock
	Advance(time.Duration) error
}

// Start runs a broker on a free loopback port for the rest of the test.
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	s := settings{props: map[string]string{}, start: DefaultStart}
	for _, o := range opts {
		o(&s)
	}
	if s.logger == nil {
		s.logger = testbroker.Logger(t, slog.LevelWarn)
	}
	var clock advancer
	var manual *locktimer.ManualClock
	if s.realClock {
		clock = locktimer.NewOffsetClock()
	} else {
		manual = locktimer.NewManualClock(s.start)
		clock = manual
	}
	if s.seedErr != nil {
		t.Fatalf("sharebrokertest: %v", s.seedErr)
	}
	cfg := broker.Config{Listen: "127.0.0.1:0", Props: s.props, Logger: s.logger, Clock: clock, Nodes: s.nodes, SASLUsers: s.users, Seed: s.seed}
	if s.http {
		cfg.HTTP = "127.0.0.1:0"
	}
	cfg.EnableTestAPI = s.testAPI
	cfg.Telemetry = s.telemetry
	b := testbroker.Start(t, cfg)
	out := &Broker{Addr: b.Addr().String(), Clock: manual, b: b, clock: clock, t: t}
	for _, a := range b.NodeAddrs() {
		out.NodeAddrs = append(out.NodeAddrs, a.String())
	}
	if a := b.HTTPAddr(); a != nil {
		out.HTTPAddr = a.String()
	}
	if !s.noReport {
		// Registered after the broker's close, so it runs before it.
		t.Cleanup(func() {
			if t.Failed() {
				t.Log(out.Report())
			}
		})
	}
	return out
}

// Advance moves the broker's clock forward by d. Everything due by then —
// lock expiries, member session timeouts, long-poll deadlines, retention —
// has happened when it returns. An advance that would take the clock past
// locktimer.MaxTime fails the test (clock-bounded) and moves nothing, so,
// like t.Fatal, call it from the test's goroutine.
func (b *Broker) Advance(d time.Duration) {
	b.t.Helper()
	if err := b.clock.Advance(d); err != nil {
		b.t.Fatalf("sharebrokertest: %v", err)
	}
}

// ShareGroup returns the group's members and each share partition's
// in-flight window (state, owner, delivery count and lock deadline of every
// tracked offset range), as the HTTP inspection API shows them.
func (b *Broker) ShareGroup(group string) (httpapi.ShareGroupJSON, bool) {
	return b.b.ShareGroup(group)
}

// RecordStory returns the story of one record of group: its state now and
// what happened to it, in order on the broker clock, as GET
// /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}
// shows it (docs/share-groups.md record-story). The error wraps
// httpapi.ErrNoStory for an unknown group, topic or partition.
func (b *Broker) RecordStory(group, topic string, partition int32, offset int64) (httpapi.RecordStoryJSON, error) {
	return b.b.RecordStory(group, topic, partition, offset)
}

// Broker returns the underlying broker, for what this package does not wrap.
func (b *Broker) Broker() *broker.Broker { return b.b }

// MoveLeader makes node lead partition of topic at the next leader epoch
// (docs/cluster.md leader-move): parked fetches on the old leader answer
// NOT_LEADER_OR_FOLLOWER at once; connections stay open.
func (b *Broker) MoveLeader(topic string, partition, node int32) error {
	_, err := b.b.MoveLeader(topic, partition, node)
	return err
}

// MoveGroupCoordinator makes node coordinate group (coordinator-move);
// its state moves whole and clients meet NOT_COORDINATOR on the old node.
func (b *Broker) MoveGroupCoordinator(group string, node int32) error {
	return b.b.MoveCoordinator(cluster.Group, group, node)
}

// MoveTransactionCoordinator makes node coordinate transactionalID.
func (b *Broker) MoveTransactionCoordinator(transactionalID string, node int32) error {
	return b.b.MoveCoordinator(cluster.Transaction, transactionalID, node)
}

// StopNode stops node id: its leaderships and coordinators fail over to
// the next live node and its listeners and connections close
// (stop-fails-over, stop-closes-connections).
func (b *Broker) StopNode(id int32) error { return b.b.StopNode(id) }

// StartNode starts node id again on the addresses it had, as a follower
// that leads nothing (start-as-follower).
func (b *Broker) StartNode(id int32) error { return b.b.StartNode(id) }
