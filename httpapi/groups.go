package httpapi

// Groups of every kind for the console and scripts: GET /v1/groups lists
// classic, KIP-848 consumer and share groups together, and GET
// /v1/groups/{group} shows one classic or consumer group with its
// committed offsets and lag (share groups have their own view, GET
// /v1/share-groups/{group}).

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
)

// ConsoleState is what the console's views read beyond the inspection
// API: the broker clock, and the classic and KIP-848 consumer groups with
// their committed offsets.
type ConsoleState interface {
	// Clock is the broker clock; lock deadlines and record stories are on it.
	Clock() locktimer.Clock
	// ClassicGroups lists every classic group, sorted by ID.
	ClassicGroups() []group.ClassicListedGroup
	// DescribeClassicGroup describes classic group id; Err is set when
	// there is none.
	DescribeClassicGroup(id string) group.ClassicDescribedGroup
	// ConsumerGroups lists every KIP-848 consumer group, sorted by ID.
	ConsumerGroups() []group.ConsumerListedGroup
	// DescribeConsumerGroups describes the consumer groups of ids, one
	// entry each, in order; Err is set for one that does not exist.
	DescribeConsumerGroups(ids []string) []group.ConsumerDescribedGroup
	// CommittedOffsets is every partition group id has committed, by
	// topic, as an admin OffsetFetch of all topics answers it.
	CommittedOffsets(id string) []group.FetchedTopic
}

// Group types as GET /v1/groups names them (Kafka's GroupType names).
const (
	groupTypeClassic  = "classic"
	groupTypeConsumer = "consumer"
	groupTypeShare    = "share"
)

// allGroups is every group of every kind, sorted by group ID: what GET
// /v1/groups lists.
func allGroups(s State) []GroupJSON {
	var out []GroupJSON
	for _, l := range s.ClassicGroups() {
		if d := s.DescribeClassicGroup(l.GroupID); d.Err == nil {
			out = append(out, classicGroupJSON(d))
		}
	}
	listed := s.ConsumerGroups()
	ids := make([]string, len(listed))
	for i, l := range listed {
		ids[i] = l.GroupID
	}
	for _, d := range s.DescribeConsumerGroups(ids) {
		if d.Err == nil { // deleted between the listing and the description
			out = append(out, consumerGroupJSON(d))
		}
	}
	for _, d := range s.DescribeShareGroups(s.ShareGroupIDs()) {
		if d.Err == nil {
			out = append(out, groupJSON(d))
		}
	}
	slices.SortFunc(out, func(a, b GroupJSON) int { return strings.Compare(a.GroupID, b.GroupID) })
	if out == nil {
		out = []GroupJSON{}
	}
	return out
}

// classicGroupJSON is a classic group in GroupJSON's shape: its protocol
// is the assignor, and members of the "consumer" protocol type show their
// subscriptions and assignments decoded. Classic groups have no epochs.
func classicGroupJSON(d group.ClassicDescribedGroup) GroupJSON {
	g := GroupJSON{GroupID: d.GroupID, Type: groupTypeClassic, State: string(d.State), Assignor: d.Protocol,
		ProtocolType: d.ProtocolType, Members: []MemberJSON{}}
	for _, m := range d.Members {
		mj := MemberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, InstanceID: m.InstanceID,
			SubscribedTopics: []string{}, Assignment: []AssignmentJSON{}}
		if d.ProtocolType == "consumer" {
			if topics, ok := group.ClassicConsumerSubscription(m.Metadata); ok {
				mj.SubscribedTopics = topics
			}
			if topics, ok := group.ClassicConsumerAssignment(m.Assignment); ok {
				for _, t := range topics {
					mj.Assignment = append(mj.Assignment, AssignmentJSON{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
		}
		g.Members = append(g.Members, mj)
	}
	return g
}

func consumerGroupJSON(d group.ConsumerDescribedGroup) GroupJSON {
	g := GroupJSON{GroupID: d.GroupID, Type: groupTypeConsumer, State: string(d.State), GroupEpoch: d.GroupEpoch,
		AssignmentEpoch: d.AssignmentEpoch, Assignor: d.AssignorName, Members: []MemberJSON{}}
	for _, m := range d.Members {
		mj := MemberJSON{MemberID: m.MemberID, MemberEpoch: m.MemberEpoch, ClientID: m.ClientID,
			ClientHost: m.ClientHost, RackID: m.RackID, InstanceID: m.InstanceID,
			SubscribedTopics: m.SubscribedTopicNames, Assignment: []AssignmentJSON{}}
		if mj.SubscribedTopics == nil {
			mj.SubscribedTopics = []string{}
		}
		for _, a := range m.Assignment {
			mj.Assignment = append(mj.Assignment, AssignmentJSON{Topic: a.Topic, Partitions: a.Partitions})
		}
		g.Members = append(g.Members, mj)
	}
	return g
}

// GroupDetailJSON is GET /v1/groups/{group}: the group and, for classic
// and consumer groups, every committed offset with the partition's log
// end and the lag between them.
type GroupDetailJSON struct {
	Group   GroupJSON         `json:"group"`
	Offsets []GroupOffsetJSON `json:"offsets"`
}

// GroupOffsetJSON is one committed offset. LogEndOffset is the
// partition's high watermark and Lag is LogEndOffset minus
// CommittedOffset, never below 0, as kafka-consumer-groups.sh --describe
// computes it; both are -1 when the partition no longer exists.
type GroupOffsetJSON struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset int64  `json:"committed_offset"`
	LeaderEpoch     int32  `json:"leader_epoch"`
	Metadata        string `json:"metadata,omitempty"`
	LogEndOffset    int64  `json:"log_end_offset"`
	Lag             int64  `json:"lag"`
}

// serveGroup answers GET /v1/groups/{group}: a classic or consumer group
// with its offsets, a share group with its members only (its partitions
// are under /v1/share-groups/{group}), 404 for none of them.
func serveGroup(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("group")
		var out GroupDetailJSON
		switch {
		case describedClassic(s, id, &out.Group):
		case describedConsumer(s, id, &out.Group):
		default:
			if d := s.DescribeShareGroups([]string{id})[0]; d.Err == nil {
				writeJSON(w, http.StatusOK, GroupDetailJSON{Group: groupJSON(d), Offsets: []GroupOffsetJSON{}})
				return
			}
			writeError(w, http.StatusNotFound, "group %q not found", id)
			return
		}
		out.Offsets = groupOffsets(s, s.CommittedOffsets(id))
		writeJSON(w, http.StatusOK, out)
	}
}

func describedClassic(s State, id string, into *GroupJSON) bool {
	d := s.DescribeClassicGroup(id)
	if d.Err != nil {
		return false
	}
	*into = classicGroupJSON(d)
	return true
}

func describedConsumer(s State, id string, into *GroupJSON) bool {
	d := s.DescribeConsumerGroups([]string{id})[0]
	if d.Err != nil {
		return false
	}
	*into = consumerGroupJSON(d)
	return true
}

// groupOffsets adds each committed offset's log end and lag.
func groupOffsets(s State, fetched []group.FetchedTopic) []GroupOffsetJSON {
	out := []GroupOffsetJSON{}
	for _, ft := range fetched {
		t := topicNamed(s, ft.Topic)
		for _, fp := range ft.Partitions {
			if fp.Offset < 0 {
				continue // nothing committed
			}
			o := GroupOffsetJSON{Topic: ft.Topic, Partition: fp.Partition, CommittedOffset: fp.Offset,
				LeaderEpoch: fp.LeaderEpoch, Metadata: fp.Metadata, LogEndOffset: -1, Lag: -1}
			if t != nil {
				if p := t.Partition(fp.Partition); p != nil {
					o.LogEndOffset = p.Offsets().HighWatermark
					o.Lag = max(0, o.LogEndOffset-fp.Offset)
				}
			}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b GroupOffsetJSON) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}
