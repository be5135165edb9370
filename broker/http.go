package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
)

// httpReadHeaderTimeout bounds how long a client may take to send request
// headers on the HTTP listener.
const httpReadHeaderTimeout = 10 * time.Second

// startHTTP binds the HTTP listener (metrics, health, inspection and, when
// enabled, the test API) and serves it in the background.
func (b *Broker) startHTTP() error {
	ln, err := net.Listen("tcp", b.cfg.HTTP)
	if err != nil {
		return fmt.Errorf("http listen on %s: %w", b.cfg.HTTP, err)
	}
	srv := &http.Server{
		Handler:           b.httpHandler(),
		ReadHeaderTimeout: httpReadHeaderTimeout,
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	b.httpLn, b.httpSrv = ln, srv
	b.mu.Unlock()
	b.log.Info("listening", "listener", "HTTP", "addr", ln.Addr().String())
	if b.cfg.EnableTestAPI {
		b.log.Warn("test API enabled: anyone reaching the HTTP listener can move the broker clock",
			"addr", ln.Addr().String(), "clock", fmt.Sprintf("%T", b.clock))
	}
	b.acceptWG.Add(1)
	go func() {
		defer b.acceptWG.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("http server stopped", "err", err)
		}
	}()
	return nil
}

// stopHTTP shuts the HTTP server down, waiting for requests in flight
// until ctx ends.
func (b *Broker) stopHTTP(ctx context.Context) {
	b.mu.Lock()
	srv := b.httpSrv
	b.mu.Unlock()
	if srv == nil {
		return
	}
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}

// HTTPAddr returns the address the HTTP server is bound to, or nil when it
// is off or not started.
func (b *Broker) HTTPAddr() net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.httpLn == nil {
		return nil
	}
	return b.httpLn.Addr()
}

func (b *Broker) httpHandler() http.Handler {
	mux := http.NewServeMux()
	// b.metrics gathers the registry, filling it on the first scrape
	// (metrics.New).
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "up"})
	})
	mux.HandleFunc("GET /readyz", b.serveReady)
	mux.HandleFunc("GET /v1/topics", b.serveTopics)
	mux.HandleFunc("GET /v1/cluster", b.serveCluster)
	mux.HandleFunc("GET /v1/groups", b.serveGroups)
	mux.HandleFunc("GET /v1/share-groups/{group}", b.serveShareGroup)
	mux.HandleFunc("GET /v1/tls/ca.pem", b.serveCA)
	mux.HandleFunc("GET /v1/acls", b.serveACLs)
	if b.cfg.EnableTestAPI {
		b.registerTestAPI(mux)
	}
	return mux
}

// serveReady answers 200 while the Kafka listener accepts connections, 503
// before Start has bound it and once Close has begun.
func (b *Broker) serveReady(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	ready := len(b.listeners) > 0 && !b.closing
	b.mu.Unlock()
	if !ready {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// TopicJSON is one topic in GET /v1/topics.
type TopicJSON struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"` // Kafka's form: URL-safe base64, no padding
	Partitions []PartitionJSON   `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"` // overrides only
}

// PartitionJSON is one partition's bounds.
type PartitionJSON struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func (b *Broker) serveTopics(w http.ResponseWriter, _ *http.Request) {
	topics := b.store.Topics()
	out := make([]TopicJSON, 0, len(topics))
	for _, t := range topics {
		tj := TopicJSON{Name: t.Name, ID: topicIDString(t.ID), Configs: t.Configs()}
		for _, p := range t.Partitions() {
			offs := p.Offsets()
			tj.Partitions = append(tj.Partitions, PartitionJSON{Partition: p.Index,
				LogStartOffset: offs.LogStart, HighWatermark: offs.HighWatermark})
		}
		out = append(out, tj)
	}
	slices.SortFunc(out, func(a, b TopicJSON) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"topics": out})
}

// ACLJSON is one ACL in GET /v1/acls. The field names are Kafka's own
// (AclBinding, kafka-acls): the codes are written as Kafka names them,
// TOPIC, PREFIXED, READ, ALLOW.
type ACLJSON struct {
	ResourceType   string `json:"resourceType"`
	ResourceName   string `json:"resourceName"`
	PatternType    string `json:"patternType"`
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      string `json:"operation"`
	PermissionType string `json:"permissionType"`
}

// serveACLs lists every ACL in creation order; enabled says whether
// authorization is on (authorizer.class.name set). Without it the list is
// empty: no ACL can be created.
func (b *Broker) serveACLs(w http.ResponseWriter, _ *http.Request) {
	out := []ACLJSON{}
	if b.authz != nil {
		for _, a := range b.authz.List() {
			out = append(out, ACLJSON{ResourceType: a.ResourceType.String(), ResourceName: a.ResourceName,
				PatternType: a.PatternType.String(), Principal: a.Principal, Host: a.Host,
				Operation: a.Operation.String(), PermissionType: a.Permission.String()})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"enabled": b.authz != nil, "acls": out})
}

// GroupJSON is one group in GET /v1/groups and GET /v1/share-groups/{group}.
type GroupJSON struct {
	GroupID         string       `json:"group_id"`
	Type            string       `json:"type"`
	State           string       `json:"state"`
	GroupEpoch      int32        `json:"group_epoch"`
	AssignmentEpoch int32        `json:"assignment_epoch"`
	Assignor        string       `json:"assignor"`
	Members         []MemberJSON `json:"members"`
}

// MemberJSON is one member of a group.
type MemberJSON struct {
	MemberID         string           `json:"member_id"`
	MemberEpoch      int32            `json:"member_epoch"`
	ClientID         string           `json:"client_id"`
	ClientHost       string           `json:"client_host"`
	RackID           *string          `json:"rack_id,omitempty"`
	SubscribedTopics []string         `json:"subscribed_topics"`
	Assignment       []AssignmentJSON `json:"assignment"`
}

// AssignmentJSON is a member's partitions of one topic.
type AssignmentJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

func groupJSON(d group.ShareDescribedGroup) GroupJSON {
	g := GroupJSON{GroupID: d.GroupID, Type: "share", State: string(d.State), GroupEpoch: d.GroupEpoch,
		AssignmentEpoch: d.AssignmentEpoch, Assignor: d.AssignorName, Members: []MemberJSON{}}
	for _, m := range d.Members {
		mj := MemberJSON{MemberID: m.MemberID, MemberEpoch: m.MemberEpoch, ClientID: m.ClientID,
			ClientHost: m.ClientHost, RackID: m.RackID, SubscribedTopics: m.SubscribedTopicNames,
			Assignment: []AssignmentJSON{}}
		for _, a := range m.Assignment {
			mj.Assignment = append(mj.Assignment, AssignmentJSON{Topic: a.Topic, Partitions: a.Partitions})
		}
		g.Members = append(g.Members, mj)
	}
	return g
}

// serveGroups lists every group with its members and assignments. Only
// share groups exist so far.
func (b *Broker) serveGroups(w http.ResponseWriter, _ *http.Request) {
	listed := b.shareGroups.List()
	ids := make([]string, len(listed))
	for i, l := range listed {
		ids[i] = l.GroupID
	}
	out := make([]GroupJSON, 0, len(ids))
	for _, d := range b.shareGroups.Describe(ids) {
		if d.Err == nil { // deleted between List and Describe
			out = append(out, groupJSON(d))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": out})
}

// ShareGroupJSON is GET /v1/share-groups/{group}: the group (absent when
// only share-partition state is left) and each share partition's window.
type ShareGroupJSON struct {
	Group      *GroupJSON           `json:"group,omitempty"`
	Partitions []SharePartitionJSON `json:"partitions"`
}

// SharePartitionJSON is one share partition's in-flight window.
type SharePartitionJSON struct {
	Topic           string      `json:"topic"`
	TopicID         string      `json:"topic_id"`
	Partition       int32       `json:"partition"`
	Leader          int32       `json:"leader"` // the node serving it (share-state-follows-partition)
	SPSO            int64       `json:"spso"`
	SPEO            int64       `json:"speo"`
	InFlightRecords int64       `json:"in_flight_records"`
	NextFetchOffset int64       `json:"next_fetch_offset"`
	Ranges          []RangeJSON `json:"ranges"`
}

// RangeJSON is a run of offsets with the same state, owner, delivery count
// and lock deadline.
type RangeJSON struct {
	FirstOffset   int64  `json:"first_offset"`
	LastOffset    int64  `json:"last_offset"`
	State         string `json:"state"`
	Owner         string `json:"owner,omitempty"`
	DeliveryCount int16  `json:"delivery_count"`
	LockDeadline  string `json:"lock_deadline,omitempty"` // RFC 3339, ACQUIRED only
}

func rangeJSON(r sharepartition.RangeState) RangeJSON {
	rj := RangeJSON{FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, State: r.State.String(),
		Owner: r.Owner, DeliveryCount: r.DeliveryCount}
	if !r.LockDeadline.IsZero() {
		rj.LockDeadline = r.LockDeadline.UTC().Format(time.RFC3339Nano)
	}
	return rj
}

func (b *Broker) serveShareGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("group")
	out, ok := b.ShareGroup(id)
	if !ok {
		writeError(w, http.StatusNotFound, "share group %q not found", id)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// ShareGroup returns what GET /v1/share-groups/{group} shows: the group's
// members and each of its share partitions' in-flight window, partitions
// in topic and partition order. ok is false when the broker knows neither
// the group nor any share state for it. Embedding tests call it directly.
func (b *Broker) ShareGroup(id string) (out ShareGroupJSON, ok bool) {
	out = ShareGroupJSON{Partitions: []SharePartitionJSON{}}
	if d := b.shareGroups.Describe([]string{id})[0]; d.Err == nil {
		g := groupJSON(d)
		out.Group = &g
	}
	for _, p := range b.shares.OfGroup(id) {
		t := b.store.TopicByID(p.Key.TopicID)
		if t == nil {
			continue
		}
		s := p.Part.Share.Snapshot()
		pj := SharePartitionJSON{Topic: t.Name, TopicID: topicIDString(t.ID), Partition: p.Key.Partition,
			Leader: b.leadership(t, p.Key.Partition).Leader, SPSO: s.SPSO, SPEO: s.SPEO, InFlightRecords: s.InFlight, NextFetchOffset: s.NextFetchOffset,
			Ranges: make([]RangeJSON, 0, len(s.Ranges))}
		for _, rs := range s.Ranges {
			pj.Ranges = append(pj.Ranges, rangeJSON(rs))
		}
		out.Partitions = append(out.Partitions, pj)
	}
	slices.SortFunc(out.Partitions, func(a, b SharePartitionJSON) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out, out.Group != nil || len(out.Partitions) > 0
}

// serveCA answers the generated CA of the SSL listeners as PEM, 404 when
// none was generated (no SSL listener, or a given certificate).
func (b *Broker) serveCA(w http.ResponseWriter, _ *http.Request) {
	ca := b.CAPEM()
	if ca == nil {
		http.Error(w, "no generated CA: the SSL listeners use a given certificate, or there is no SSL listener", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(ca)
}
