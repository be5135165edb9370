// Package broker is the Kafka-protocol edge of sharebroker: listeners,
// connections, the dispatch table and one handler per API. Handlers check
// versions and input, translate kmsg structs into the domain packages' own
// types, call them and translate back. Kafka error codes exist only here
// (errors.go).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
)

// Broker is one running Kafka node. Create it with New, start it with Start,
// stop it with Close.
type Broker struct {
	cfg   *resolved
	log   *slog.Logger
	clock locktimer.Clock
	store *storage.Store

	// producerIDs hands out idempotent producer IDs.
	producerIDs atomic.Int64

	// Groups: the registry says which kind of group owns an ID; group
	// configs (resource type GROUP) exist whether or not the group does.
	groupRegistry *group.Registry
	groupConfigs  *group.ConfigStore
	shareGroups   *group.ShareGroups
	classicGroups *group.ClassicGroups
	shareSessions *shareSessions
	shareParts    *shareParts
	metrics       *metrics

	// consumerGroups are KIP-848 consumer groups (68_consumer_group_heartbeat.go).
	consumerGroups *group.ConsumerGroups

	mu        sync.Mutex // guards the fields below
	listeners []*listener
	httpLn    net.Listener
	httpSrv   *http.Server
	conns     map[*conn]struct{}
	closing   bool

	// done is closed when Close begins: long-polls return at once and
	// background loops stop.
	done     chan struct{}
	connWG   sync.WaitGroup // connection goroutines
	acceptWG sync.WaitGroup // accept loops and background loops
}

// listener is one bound Kafka listener and the address it advertises.
type listener struct {
	ln            net.Listener
	advertiseHost string
	advertisePort int32
}

// New validates cfg and returns a broker that is not yet listening.
func New(cfg Config) (*Broker, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:   r,
		log:   r.Logger,
		clock: r.Clock,
		store: storage.NewStore(),
		conns: make(map[*conn]struct{}),
		done:  make(chan struct{}),
	}
	b.groupRegistry = group.NewRegistry()
	consumer, err := consumerConfig(r.props)
	if err != nil {
		return nil, err
	}
	b.groupConfigs = group.NewGroupConfigStore(r.share, consumer)
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
	classic, err := classicConfig(r.props)
	if err != nil {
		return nil, err
	}
	b.classicGroups, err = group.NewClassicGroups(group.ClassicOptions{
		Clock:    r.Clock,
		Config:   classic,
		Registry: b.groupRegistry,
		Topics:   b.topicInfo,
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
		ListTopics: b.topicNames,
	})
	if err != nil {
		return nil, err
	}
	b.shareSessions = newShareSessions(int(r.share.MaxShareSessions))
	b.shareParts = newShareParts(r.Clock, func(late time.Duration) {
		b.metrics.fireDelay.Observe(late.Seconds())
	})
	b.metrics = newMetrics(b, r.Registry)
	return b, nil
}

// Start binds the listener and starts serving in the background.
func (b *Broker) Start() error {
	ln, err := net.Listen("tcp", b.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", b.cfg.Listen, err)
	}
	l, err := newListener(ln, b.cfg.Advertise)
	if err != nil {
		ln.Close()
		return err
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	b.listeners = append(b.listeners, l)
	b.mu.Unlock()

	b.log.Info("listening", "listener", "PLAINTEXT", "addr", ln.Addr().String(),
		"advertised", net.JoinHostPort(l.advertiseHost, strconv.Itoa(int(l.advertisePort))))
	b.acceptWG.Add(2)
	go b.acceptLoop(l)
	go b.retentionLoop()
	if b.cfg.HTTP != "" {
		return b.startHTTP() // on failure the caller's Close stops the rest
	}
	return nil
}

func newListener(ln net.Listener, advertise string) (*listener, error) {
	bound := ln.Addr().(*net.TCPAddr)
	l := &listener{ln: ln, advertiseHost: "localhost", advertisePort: int32(bound.Port)}
	if !bound.IP.IsUnspecified() {
		l.advertiseHost = bound.IP.String()
	}
	if advertise != "" {
		host, port, _ := net.SplitHostPort(advertise) // validated in resolve
		n, _ := strconv.Atoi(port)
		l.advertiseHost, l.advertisePort = host, int32(n)
	}
	return l, nil
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
func (b *Broker) Registry() *prometheus.Registry { return b.metrics.reg }

// Clock returns the broker's clock.
func (b *Broker) Clock() locktimer.Clock { return b.clock }

func (b *Broker) acceptLoop(l *listener) {
	defer b.acceptWG.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
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
			case <-b.done:
				return
			}
		}
		backoff = 0
		c := newConn(b, l, nc)
		b.mu.Lock()
		if b.closing {
			b.mu.Unlock()
			nc.Close()
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
	close(b.done)
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
	b.consumerGroups.Close()
	b.shareParts.timers.Close()
	b.log.Info("stopped")
	return nil
}

// retentionLoop applies retention every log.retention.check.interval.ms on
// the broker's clock.
func (b *Broker) retentionLoop() {
	defer b.acceptWG.Done()
	interval := time.Duration(b.cfg.props.int64("log.retention.check.interval.ms")) * time.Millisecond
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
		case <-b.done:
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
			p.ApplyRetention(tc.retentionMs, tc.retentionBytes, nowMs)
		}
	}
}
