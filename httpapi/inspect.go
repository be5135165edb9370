package httpapi

// The inspection endpoints: read-only JSON views of what the broker holds,
// built here from the domain packages' own values, so their shape is
// decided in one place.

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// State is what the health and inspection endpoints read. Each call reads
// the state at that moment, under the locks of whatever holds it.
type State interface {
	// Ready reports whether the Kafka listeners accept connections: bound
	// by Start, and Close not begun.
	Ready() bool
	// Topics lists every topic, sorted by name.
	Topics() []*storage.Topic
	// ACLs lists every ACL in creation order; enabled is false when
	// authorization is off (no authorizer.class.name).
	ACLs() (list []acl.Binding, enabled bool)
	// ShareGroupIDs lists every share group's ID.
	ShareGroupIDs() []string
	// DescribeShareGroups describes the groups of ids, one entry each, in
	// order; a group that does not exist has Err set.
	DescribeShareGroups(ids []string) []group.ShareDescribedGroup
	// SharePartitions lists the share partitions the broker holds for
	// group, in any order.
	SharePartitions(group string) []SharePartition
	// Cluster is the nodes, leaders and coordinators as GET /v1/cluster
	// shows them.
	Cluster() ClusterJSON
	// CAPEM is the generated CA of the SSL listeners as PEM, nil when none
	// was generated.
	CAPEM() []byte
	// StoryState reads the record stories and the broker clock (story.go).
	StoryState
}

// SharePartition is one share partition of a group, as State finds it.
type SharePartition struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	Leader    int32 // the node serving it (share-state-follows-partition)
	Window    sharepartition.Snapshot
	// Lag is the records still to be delivered, as the share lag metric
	// counts them (shareserve.Partition.Lag); -1 before the SPSO is chosen.
	Lag int64
	// Share is the share partition itself, whose record stories list its
	// archives and dead letters; nil lists none.
	Share *sharepartition.SharePartition
}

// serveReady answers 200 while the Kafka listener accepts connections, 503
// before Start has bound it and once Close has begun.
func serveReady(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
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

func serveTopics(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		topics := s.Topics()
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
func serveACLs(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		list, enabled := s.ACLs()
		out := []ACLJSON{}
		for _, a := range list {
			out = append(out, ACLJSON{ResourceType: a.ResourceType.String(), ResourceName: a.ResourceName,
				PatternType: a.PatternType.String(), Principal: a.Principal, Host: a.Host,
				Operation: a.Operation.String(), PermissionType: a.Permission.String()})
		}
		writeJSON(w, http.StatusOK, map[string]any{"enabled": enabled, "acls": out})
	}
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
func serveGroups(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ids := s.ShareGroupIDs()
		out := make([]GroupJSON, 0, len(ids))
		for _, d := range s.DescribeShareGroups(ids) {
			if d.Err == nil { // deleted between the listing and the description
				out = append(out, groupJSON(d))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"groups": out})
	}
}

// ShareGroupJSON is GET /v1/share-groups/{group}: the group (absent when
// only share-partition state is left) and each share partition's window.
type ShareGroupJSON struct {
	Group      *GroupJSON           `json:"group,omitempty"`
	Partitions []SharePartitionJSON `json:"partitions"`
	// Now is the broker clock when the answer was made (RFC 3339 with
	// nanoseconds), against which lock deadlines count down.
	Now string `json:"now"`
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
	Lag             int64       `json:"lag"` // -1 before the SPSO is chosen
	// Archived and DeadLetters are the newest archives and dead-letter
	// copies the record-story ring still holds, newest last, at most 100
	// each.
	Archived    []ArchivedJSON   `json:"archived"`
	DeadLetters []DeadLetterJSON `json:"dead_letters"`
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

func serveShareGroup(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("group")
		out, ok := ShareGroup(s, id)
		if !ok {
			writeError(w, http.StatusNotFound, "share group %q not found", id)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// ShareGroup returns what GET /v1/share-groups/{group} shows: the group's
// members and each of its share partitions' in-flight window, partitions
// in topic and partition order. ok is false when s knows neither the
// group nor any share state for it.
func ShareGroup(s State, id string) (out ShareGroupJSON, ok bool) {
	out = ShareGroupJSON{Partitions: []SharePartitionJSON{}, Now: formatTime(s.Clock().Now())}
	if d := s.DescribeShareGroups([]string{id})[0]; d.Err == nil {
		g := groupJSON(d)
		out.Group = &g
	}
	for _, p := range s.SharePartitions(id) {
		w := p.Window
		pj := SharePartitionJSON{Topic: p.Topic, TopicID: topicIDString(p.TopicID), Partition: p.Partition,
			Leader: p.Leader, SPSO: w.SPSO, SPEO: w.SPEO, InFlightRecords: w.InFlight, NextFetchOffset: w.NextFetchOffset,
			Ranges: make([]RangeJSON, 0, len(w.Ranges)), Lag: p.Lag}
		pj.Archived, pj.DeadLetters = storyLists(p.Share)
		for _, rs := range w.Ranges {
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
func serveCA(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ca := s.CAPEM()
		if ca == nil {
			http.Error(w, "no generated CA: the SSL listeners use a given certificate, or there is no SSL listener", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(ca)
	}
}
