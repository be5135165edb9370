package broker

// The broker's side of the HTTP listener (package httpapi): starting and
// stopping it with the broker, and httpState, through which it reads and
// moves the broker.

import (
	"context"
	"fmt"
	"net"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/faults"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// startHTTP binds the HTTP listener (metrics, health, inspection and, when
// enabled, the test API) and serves it in the background.
func (b *Broker) startHTTP() error {
	s := httpState{b}
	cfg := httpapi.Config{
		// b.metrics fills the broker's registry on the first scrape
		// (metrics.New).
		Metrics:       b.metrics,
		State:         s,
		Log:           b.log,
		Token:         b.cfg.HTTPToken,
		MetricsPublic: b.cfg.HTTPMetricsPublic,
		Clients:       b.clientMetrics,
	}
	if b.cfg.EnableTestAPI {
		cfg.Control = s
	}
	srv, err := httpapi.Listen(b.cfg.HTTP, httpapi.Handler(cfg), httpapi.Limits{MaxConnections: b.cfg.HTTPMaxConnections})
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		srv.Close()
		return net.ErrClosed
	}
	b.http = srv
	b.mu.Unlock()
	b.log.Info("listening", "listener", "HTTP", "addr", srv.Addr().String())
	if b.cfg.EnableTestAPI {
		who := "anyone reaching the HTTP listener"
		if b.cfg.HTTPToken != "" {
			who = "anyone holding the HTTP token"
		}
		b.log.Warn("test API enabled: "+who+" can move the broker clock, stop nodes and inject faults",
			"addr", srv.Addr().String(), "clock", fmt.Sprintf("%T", b.clock))
	}
	b.acceptWG.Add(1)
	go func() {
		defer b.acceptWG.Done()
		if err := srv.Serve(); err != nil {
			b.log.Error("http server stopped", "err", err)
		}
	}()
	return nil
}

// stopHTTP shuts the HTTP server down, waiting for requests in flight
// until ctx ends.
func (b *Broker) stopHTTP(ctx context.Context) {
	b.mu.Lock()
	srv := b.http
	b.mu.Unlock()
	if srv != nil {
		srv.Shutdown(ctx)
	}
}

// HTTPAddr returns the address the HTTP server is bound to, or nil when it
// is off or not started.
func (b *Broker) HTTPAddr() net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.http == nil {
		return nil
	}
	return b.http.Addr()
}

// ShareGroup returns what GET /v1/share-groups/{group} shows: the group's
// members and each of its share partitions' in-flight window, partitions
// in topic and partition order. ok is false when the broker knows neither
// the group nor any share state for it. Embedding tests call it directly.
func (b *Broker) ShareGroup(id string) (httpapi.ShareGroupJSON, bool) {
	return httpapi.ShareGroup(httpState{b}, id)
}

// InspectState is the broker as the HTTP inspection API reads it, for
// embedding tests that render it themselves (sharebrokertest's failure
// report).
func (b *Broker) InspectState() httpapi.State { return httpState{b} }

// ShareStateGroups lists the groups holding share-partition state, sorted,
// whether or not the group coordinator knows them.
func (b *Broker) ShareStateGroups() []string { return b.shareServing.Groups() }

// httpState is the broker as the HTTP listener reads it (httpapi.State)
// and, with the test API, moves it (httpapi.Control). Clock, Cluster,
// CAPEM, MoveLeader, MoveCoordinator, StopNode and StartNode are the
// Broker's own.
type httpState struct{ *Broker }

// Ready is true while the Kafka listener accepts connections: false before
// Start has bound it and once Close has begun.
func (s httpState) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.listeners) > 0 && !s.closing
}

func (s httpState) Topics() []*storage.Topic { return s.store.Topics() }

func (s httpState) ACLs() ([]acl.Binding, bool) {
	if s.authz == nil {
		return nil, false
	}
	return s.authz.List(), true
}

func (s httpState) ShareGroupIDs() []string {
	listed := s.shareGroups.List()
	ids := make([]string, len(listed))
	for i, l := range listed {
		ids[i] = l.GroupID
	}
	return ids
}

func (s httpState) DescribeShareGroups(ids []string) []group.ShareDescribedGroup {
	return s.shareGroups.Describe(ids)
}

// SharePartitions lists group's share partitions whose topic still
// exists, each with the node leading it.
func (s httpState) SharePartitions(groupID string) []httpapi.SharePartition {
	var out []httpapi.SharePartition
	for _, p := range s.shareServing.OfGroup(groupID) {
		t := s.store.TopicByID(p.Key.TopicID)
		if t == nil {
			continue
		}
		window, lag := p.Part.Inspect()
		out = append(out, httpapi.SharePartition{Topic: t.Name, TopicID: t.ID, Partition: p.Key.Partition,
			Leader: s.leadership(t, p.Key.Partition).Leader, Window: window, Lag: lag, Share: p.Part.Share})
	}
	return out
}

// ShareStory finds group's share partition of topic's partition for its
// record stories.
func (s httpState) ShareStory(groupID, topic string, partition int32) (*sharepartition.SharePartition, bool) {
	t := s.store.Topic(topic)
	if t == nil || t.Partition(partition) == nil {
		return nil, false
	}
	p := s.shareServing.Lookup(shareserve.Key{Group: groupID, TopicPartition: shareserve.TopicPartition{TopicID: t.ID, Partition: partition}})
	if p == nil {
		return nil, true
	}
	return p.Share, true
}

// RecordStory returns what GET
// /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}
// shows; the error wraps httpapi.ErrNoStory for an unknown group, topic or
// partition. Embedding tests call it directly.
func (b *Broker) RecordStory(group, topic string, partition int32, offset int64) (httpapi.RecordStoryJSON, error) {
	return httpapi.RecordStory(httpState{b}, group, topic, partition, offset)
}

func (s httpState) Coordinator(typ cluster.CoordinatorType, key string) int32 {
	return s.cluster.Coordinator(typ, key)
}

func (s httpState) Faults() []faults.Fault { return s.faults.Snapshot() }

func (s httpState) ArmFault(in faults.Spec) (faults.Fault, error) {
	f, err := newFault(in)
	if err != nil {
		return faults.Fault{}, err
	}
	return s.faults.Add(f), nil
}

func (s httpState) ClearFaults() int { return s.faults.Clear() }
