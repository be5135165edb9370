// Package broker is the Kafka-protocol edge of sharebroker: listeners,
// connections, the dispatch table and one handler per API. Handlers check
// versions and input, translate kmsg structs into the domain packages' own
// types, call them and translate back. Kafka error codes exist only here
// (errors.go).
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/faults"
	"github.com/sharebroker/sharebroker/features"
	"github.com/sharebroker/sharebroker/fetchsession"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/connquota"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/metrics"
	"github.com/sharebroker/sharebroker/persist"
	"github.com/sharebroker/sharebroker/placement"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/telemetry"
	"github.com/sharebroker/sharebroker/txn"
)

// Broker is one running Kafka node. Create it with New, start it with Start,
// stop it with Close.
type Broker struct {
	cfg   *resolved
	log   *slog.Logger
	clock locktimer.Clock
	store *storage.Store

	// data binds the state to the data directory (datadir.go) and hands
	// out producer IDs; without a data directory it only counts them.
	data *persist.Binding
	// txns is the transaction coordinator (txn_markers.go).
	txns *txn.Coordinator
	groupCoordinators
	// shareServing holds share sessions and share partitions, and does the
	// work of ShareFetch and ShareAcknowledge below the wire.
	shareServing *shareserve.Service
	metrics      *metrics.Metrics
	faults       faults.Store // armed by the test API (faults.go)
	// telemetry is client telemetry (KIP-714): client instances and
	// CLIENT_METRICS subscriptions (telemetry.go).
	telemetry *telemetry.Manager
	// clientMetrics keeps what clients push, for /metrics and /v1/clients
	// (clientmetrics.go).
	clientMetrics *clientmetrics.Store

	// apiRanges are the versions of each API served as the configured
	// Kafka release, and features the cluster's feature levels
	// (release.go, docs/features.md).
	apiRanges [maxAPIKey + 1]versionRange
	features  *features.Set

	// fetchSessions are each node's Fetch sessions (KIP-227), by node
	// index (01_fetch.go).
	fetchSessions []*fetchsession.Cache

	nodes
	// authn is who a client is: the TLS of the SSL listeners, the
	// enabled SASL mechanisms and the SASL users (package auth).
	authn *auth.Authenticator
	// authz decides requests (authorize.go); nil when
	// authorizer.class.name is empty: everything is allowed.
	authz *acl.Authorizer
	serving
	testHooks
}

// groupCoordinators are the three kinds of group and what they share: the
// registry says which kind owns a group ID, and group configs (resource
// type GROUP) exist whether or not the group does.
type groupCoordinators struct {
	groupRegistry  *group.Registry
	groupConfigs   *group.ConfigStore
	shareGroups    *group.ShareGroups
	classicGroups  *group.ClassicGroups
	consumerGroups *group.ConsumerGroups // KIP-848 (68_consumer_group_heartbeat.go)
}

// nodes are the nodes of the cluster in this process and where each
// partition and coordinator is placed (nodes.go, moves.go).
type nodes struct {
	// cluster places partition leaders and coordinators on the nodes;
	// with one node it places everything on it.
	cluster *cluster.Cluster
	// placement applies cluster to the topics, groups and transactional
	// IDs there are, and makes the moves.
	placement *placement.Placement
	// endpoints are the advertised addresses of every node's listeners,
	// by node index then listener index; set by Start before anything is
	// served and never changed after.
	endpoints atomic.Pointer[[][]endpoint]
	// nodesMu serializes StopNode and StartNode.
	nodesMu sync.Mutex
}

// serving is what the broker is serving: its listeners, connections and
// HTTP server, and its closing.
type serving struct {
	mu        sync.Mutex // guards the fields below
	listeners []*listener
	http      *httpapi.Server // nil when off or not started
	conns     map[*conn]struct{}
	closing   bool

	// serveCtx is cancelled (stopServing) when Close begins: long polls
	// return at once and background loops stop.
	serveCtx    context.Context
	stopServing context.CancelFunc
	connWG      sync.WaitGroup // connection goroutines
	acceptWG    sync.WaitGroup // accept loops and background loops
	// quotas bound each node's Kafka connections (connlimits.go), by
	// node index; made in New, never changed.
	quotas []*connquota.Quotas
}

// testHooks are nil outside tests; tests set them before the broker
// serves any request (export_test.go).
type testHooks struct {
	// txnProduceHook runs in Produce between the coordinator's check of a
	// transactional batch and its append, so a test can end the
	// transaction in that window (marker-last).
	txnProduceHook func()
	// awaitHook runs in awaitGroup when a JoinGroup or SyncGroup answer is
	// not ready at once, just before the wait, with a function that
	// reports whether the answer has come since: the fuzz targets use it
	// to tell a parked call from a slow one, and a call its group answered
	// from one still waiting.
	awaitHook func(answered func() bool)
}

// listener is one bound Kafka listener of one node and the address it
// advertises.
type listener struct {
	name          string
	index         int          // in cfg.Listeners: the same on every node
	node          int32        // the ID of the node it belongs to
	ln            net.Listener // guarded by Broker.mu once serving
	bound         string       // the address ln bound: StartNode binds it again
	stopped       bool         // its node is stopped; guarded by Broker.mu
	advertiseHost string
	advertisePort int32
	tls           *tls.Config // nil for PLAINTEXT and SASL_PLAINTEXT
	sasl          bool        // SASL_PLAINTEXT or SASL_SSL: authenticate first
}

// New validates cfg and returns a broker that is not yet listening.
func New(cfg Config) (*Broker, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:     r,
		log:     r.Logger,
		clock:   r.Clock,
		store:   storage.NewStore(),
		serving: serving{conns: make(map[*conn]struct{})},
	}
	b.serveCtx, b.stopServing = context.WithCancel(context.Background())
	for _, p := range r.ignored {
		b.log.Info("Kafka property accepted and not used", "property", p.Name, "value", p.Value, "why", p.Why)
	}
	if b.authn, err = newAuthenticator(r); err != nil {
		return nil, err
	}
	if b.authz, err = newAuthorizer(r.props); err != nil {
		return nil, err
	}
	if b.cluster, err = cluster.New(r.NodeID, r.Nodes); err != nil {
		return nil, err
	}
	release := kversionOf(r.props[kafkaVersionProp])
	b.apiRanges = servedAPIs(r.props[kafkaVersionProp], release)
	if err := b.newFeatures(release); err != nil {
		return nil, err
	}
	b.groupRegistry = group.NewRegistry()
	consumer, err := r.props.ConsumerGroups()
	if err != nil {
		return nil, err
	}
	b.groupConfigs = group.NewGroupConfigStore(r.share, consumer)
	b.groupConfigs.SetRelease(r.props[kafkaVersionProp])
	b.shareGroups, err = group.NewShareGroups(group.ShareOptions{
		Clock:    r.Clock,
		Broker:   r.share,
		Configs:  b.groupConfigs,
		Registry: b.groupRegistry,
		Topics:   b.topicInfo,
	})
	if err != nil {
		return nil, err
	}
	classic, err := r.props.ClassicGroups()
	if err != nil {
		return nil, err
	}
	b.classicGroups, err = group.NewClassicGroups(group.ClassicOptions{
		Clock:    r.Clock,
		Config:   classic,
		Registry: b.groupRegistry,
		Topics:   b.topicInfo,
		NewID:    r.newMemberID,
	})
	if err != nil {
		return nil, err
	}
	b.consumerGroups, err = group.NewConsumerGroups(group.ConsumerOptions{
		Clock:      r.Clock,
		Config:     consumer,
		Configs:    b.groupConfigs,
		Registry:   b.groupRegistry,
		Topics:     b.topicInfo,
		ListTopics: b.store.TopicNames,
		NewID:      r.newMemberID,
	})
	if err != nil {
		return nil, err
	}
	if err := group.Link(b.classicGroups, b.consumerGroups); err != nil {
		return nil, err
	}
	b.shareServing = shareserve.New(shareserve.Options{
		Store:       b.store,
		Clock:       r.Clock,
		MaxSessions: int(r.share.MaxShareSessions),
		GroupConfig: b.groupConfigs.Share,
		OnLockFire: func(late time.Duration) {
			b.metrics.FireDelay(late)
		},
		Edge:        shareEdge{b},
		DeadLetters: b.deadLetterOptions(),
		StoryEvents: int(b.cfg.props.Int32("sharebroker.record.story.events")),
	})
	b.fetchSessions = newFetchSessions(r.Nodes, int(r.props.Int32("max.incremental.fetch.session.cache.slots")))
	b.clientMetrics = clientmetrics.New(b.clock, clientmetrics.Limits{})
	b.metrics = newMetrics(b, r.Registry, r.ownRegistry)
	b.txns = b.newTxnCoordinator()
	b.placement = placement.New(b.cluster, b.store, placement.Groups{Classic: b.classicGroups, Consumer: b.consumerGroups, Share: b.shareGroups}, b.txns, b.shareServing)
	b.telemetry = b.newTelemetry()
	b.data = b.newPersist()
	b.newQuotas()
	return b, nil
}

// Start binds every listener of every node and starts serving in the
// background. If one cannot bind, none serves. With a data directory or
// a seed it first starts the HTTP server (so /readyz answers 503
// meanwhile), recovers the directory (ready-after-recovery), then applies
// the seed (seed-before-listen).
func (b *Broker) Start() error {
	seeded := !b.cfg.Seed.Empty()
	httpFirst := (b.cfg.DataDir != "" || seeded) && b.cfg.HTTP != ""
	if httpFirst {
		if err := b.startHTTP(); err != nil {
			return err
		}
	}
	if b.cfg.DataDir != "" {
		if err := b.recoverData(); err != nil {
			return err
		}
	}
	if seeded {
		if err := b.applySeed(); err != nil {
			return err
		}
	}
	var ls []*listener
	fail := func(err error) error {
		for _, l := range ls {
			l.ln.Close()
		}
		return err
	}
	endpoints := make([][]endpoint, b.cfg.Nodes)
	for i := range b.cfg.Nodes {
		node := b.cfg.NodeID + int32(i)
		for j, lc := range b.cfg.Listeners {
			listen, _ := brokerconfig.NodeAddr(lc.Listen, i) // checked in resolve
			advertise := lc.Advertise
			if advertise != "" {
				advertise, _ = brokerconfig.NodeAddr(advertise, i)
			}
			ln, err := b.listenKafka(i, listen)
			if err != nil {
				if b.cfg.Nodes > 1 {
					return fail(fmt.Errorf("node %d: listener %s: listen on %s: %w", node, lc.Name, listen, err))
				}
				return fail(fmt.Errorf("listener %s: listen on %s: %w", lc.Name, listen, err))
			}
			l := newListener(lc.Name, ln, advertise)
			l.index, l.node = j, node
			if lc.UsesTLS() {
				l.tls = b.authn.TLSConfig()
			}
			l.sasl = lc.UsesSASL()
			ls = append(ls, l)
			endpoints[i] = append(endpoints[i], endpoint{host: l.advertiseHost, port: l.advertisePort})
		}
	}
	b.endpoints.Store(&endpoints)
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		for _, l := range ls {
			l.ln.Close()
		}
		return net.ErrClosed
	}
	b.listeners = append(b.listeners, ls...)
	b.mu.Unlock()

	b.acceptWG.Add(len(ls) + 1)
	for _, l := range ls {
		b.log.Info("listening", "node", l.node, "listener", l.name, "addr", l.ln.Addr().String(),
			"advertised", net.JoinHostPort(l.advertiseHost, strconv.Itoa(int(l.advertisePort))))
		go b.acceptLoop(l, l.ln)
	}
	go b.retentionLoop()
	if b.cfg.HTTP != "" && !httpFirst {
		return b.startHTTP() // on failure the caller's Close stops the rest
	}
	return nil
}

func newListener(name string, ln net.Listener, advertise string) *listener {
	bound := ln.Addr().(*net.TCPAddr)
	l := &listener{name: name, ln: ln, bound: bound.String(), advertiseHost: "localhost", advertisePort: int32(bound.Port)}
	if !bound.IP.IsUnspecified() {
		l.advertiseHost = bound.IP.String()
	}
	if advertise != "" {
		host, port, _ := net.SplitHostPort(advertise) // validated in resolve
		n, _ := strconv.Atoi(port)
		l.advertiseHost, l.advertisePort = host, int32(n)
	}
	return l
}

// ListenerAddr returns the address the listener named name (upper-cased,
// as configured) is bound to, or nil before Start or for no such listener.
func (b *Broker) ListenerAddr(name string) net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.listeners {
		if l.name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// Addr returns the address the first listener is bound to, or nil before
// Start.
func (b *Broker) Addr() net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.listeners) == 0 {
		return nil
	}
	return b.listeners[0].ln.Addr()
}

// Registry returns the registry holding the broker's metrics.
func (b *Broker) Registry() *prometheus.Registry { return b.metrics.Registry() }

// Clock returns the broker's clock.
func (b *Broker) Clock() locktimer.Clock { return b.clock }

func (b *Broker) acceptLoop(l *listener, ln net.Listener) {
	defer b.acceptWG.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and similar: back off, as
			// net/http.Server does, rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			b.log.Warn("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-b.serveCtx.Done():
				return
			}
		}
		backoff = 0
		// The socket itself, so that net.Buffers writes fetch answers
		// with writev; forgetConn gives the quota back.
		quota, _ := nc.(*connquota.Conn)
		if quota != nil {
			nc = quota.NetConn()
		}
		if l.tls != nil {
			nc = tls.Server(nc, l.tls) // the handshake runs in serve
		}
		c := newConn(b, l, nc)
		c.quota = quota
		b.mu.Lock()
		if b.closing || l.stopped || l.ln != ln { // its node stopped meanwhile
			b.mu.Unlock()
			nc.Close()
			quota.Release()
			return
		}
		b.conns[c] = struct{}{}
		b.connWG.Add(1)
		b.mu.Unlock()
		go c.serve()
	}
}

func (b *Broker) forgetConn(c *conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
	c.quota.Release() // after serve closed the socket
	b.connWG.Done()
}

// Close shuts the broker down gracefully: it stops accepting, lets each
// connection finish the request it is handling (long-polls return at once),
// then closes every connection. If ctx ends first, connections are closed
// without waiting. Close is idempotent.
func (b *Broker) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return nil
	}
	b.closing = true
	b.stopServing()
	for _, l := range b.listeners {
		l.ln.Close()
	}
	// An immediate read deadline makes each idle connection's read return;
	// a connection that is handling a request finishes it first, because
	// the deadline only affects the next read.
	for c := range b.conns {
		c.nc.SetReadDeadline(time.Now())
	}
	b.mu.Unlock()
	b.stopHTTP(ctx)
	b.acceptWG.Wait()

	finished := make(chan struct{})
	go func() {
		b.connWG.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		b.mu.Lock()
		for c := range b.conns {
			c.nc.Close()
		}
		b.mu.Unlock()
		<-finished
	}
	b.shareGroups.Close()
	b.classicGroups.Close()
	b.txns.Close()
	b.consumerGroups.Close()
	b.shareServing.Close()
	b.data.Close()
	for _, q := range b.quotas {
		q.Close()
	}
	b.log.Info("stopped")
	return nil
}

// retentionLoop applies retention every log.retention.check.interval.ms on
// the broker's clock.
func (b *Broker) retentionLoop() {
	defer b.acceptWG.Done()
	interval := time.Duration(b.cfg.props.Int64("log.retention.check.interval.ms")) * time.Millisecond
	tick := make(chan struct{}, 1)
	for {
		t := b.clock.AfterFunc(interval, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-tick:
			b.applyRetention()
		case <-b.serveCtx.Done():
			t.Stop()
			return
		}
	}
}

func (b *Broker) applyRetention() {
	nowMs := b.clock.Now().UnixMilli()
	for _, t := range b.store.Topics() {
		tc := b.topicConfig(t)
		for _, p := range t.Partitions() {
			b.retain(p, tc, nowMs)
		}
	}
}

// retain applies retention to one partition. Only a data directory that
// cannot record the new log start fails it; the next check tries again.
func (b *Broker) retain(p *storage.Partition, tc topicSettings, nowMs int64) {
	if err := p.ApplyRetention(tc.RetentionMs, tc.RetentionBytes, nowMs); err != nil {
		b.log.Warn("retention not applied", attrTopic, p.Topic, attrPartition, p.Index, "err", err)
	}
}
