package httpapi

// Record stories (docs/share-groups.md record-story): GET
// /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}
// answers what happened to one record of a share group, from the share
// partition's bounded ring of events, with the record's state now; GET
// /v1/share-groups/{group} lists each share partition's latest archives and
// dead letters from the same ring.

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
)

// StoryState is what the record stories read; State includes it.
type StoryState interface {
	// Clock is the broker clock: "now" in the answers is its time.
	Clock() locktimer.Clock
	// ShareStory returns group's share partition of partition of topic,
	// nil when the group has no state there; known is false when the
	// topic or the partition does not exist.
	ShareStory(group, topic string, partition int32) (sp *sharepartition.SharePartition, known bool)
}

// RecordStoryJSON is GET
// /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}.
type RecordStoryJSON struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Now       string `json:"now"` // the broker clock, RFC 3339 with nanoseconds
	// Record is the record's state now, null outside the in-flight window.
	Record *RecordStateJSON `json:"record"`
	// Events are those of the share partition's ring whose offsets include
	// this one, oldest first.
	Events []StoryEventJSON `json:"events"`
	// Truncated: the ring dropped older events of this record.
	Truncated bool `json:"truncated"`
}

// RecordStateJSON is one record's state in the in-flight window.
type RecordStateJSON struct {
	State         string `json:"state"` // available, acquired, acknowledged, archived
	Owner         string `json:"owner,omitempty"`
	DeliveryCount int16  `json:"delivery_count"`
	LockDeadline  string `json:"lock_deadline,omitempty"` // acquired only
}

// StoryEventJSON is one event of a record story. Fields that do not apply
// to the event are left out.
type StoryEventJSON struct {
	Time  string `json:"time"`
	Event string `json:"event"` // sharepartition.StoryKind's names
	// FirstOffset and LastOffset are the run of offsets the event covered
	// as one (an acquisition of a whole batch is one event).
	FirstOffset   int64  `json:"first_offset"`
	LastOffset    int64  `json:"last_offset"`
	Member        string `json:"member,omitempty"`
	DeliveryCount int16  `json:"delivery_count,omitempty"` // acquired
	LockDeadline  string `json:"lock_deadline,omitempty"`  // acquired, renewed
	Type          string `json:"type,omitempty"`           // acknowledged, released: accept, reject, gap, release
	Reason        string `json:"reason,omitempty"`         // archived; session_closed: session_closed or connection_closed
	DLQTopic      string `json:"dlq_topic,omitempty"`      // dead_lettered
	DLQPartition  *int32 `json:"dlq_partition,omitempty"`
	DLQOffset     *int64 `json:"dlq_offset,omitempty"` // of this record
}

// ArchivedJSON is one run of records archived together, in GET
// /v1/share-groups/{group}.
type ArchivedJSON struct {
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Reason      string `json:"reason"`
	Time        string `json:"time"`
}

// DeadLetterJSON is one record copied to the dead-letter topic, in GET
// /v1/share-groups/{group}.
type DeadLetterJSON struct {
	Offset       int64  `json:"offset"`
	DLQTopic     string `json:"dlq_topic"`
	DLQPartition int32  `json:"dlq_partition"`
	DLQOffset    int64  `json:"dlq_offset"`
	Time         string `json:"time"`
}

// maxListed bounds the archives and dead letters GET
// /v1/share-groups/{group} lists per share partition.
const maxListed = 100

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ErrNoStory is why RecordStory found nothing to tell: the group, topic or
// partition is unknown.
var ErrNoStory = errors.New("no such share partition")

// RecordStory returns the story of offset of partition of topic in group.
// The error wraps ErrNoStory when the group, the topic or the partition
// does not exist; a record the ring has no event of and that is outside
// the window has an empty story.
func RecordStory(s State, group, topic string, partition int32, offset int64) (RecordStoryJSON, error) {
	sp, known := s.ShareStory(group, topic, partition)
	if !known {
		return RecordStoryJSON{}, errNoStory("topic %q has no partition %d", topic, partition)
	}
	if sp == nil && s.DescribeShareGroups([]string{group})[0].Err != nil {
		return RecordStoryJSON{}, errNoStory("share group %q not found", group)
	}
	out := RecordStoryJSON{Group: group, Topic: topic, Partition: partition, Offset: offset,
		Now: formatTime(s.Clock().Now()), Events: []StoryEventJSON{}}
	if sp == nil {
		return out, nil
	}
	st := sp.Story(offset)
	out.Truncated = st.Truncated
	if r := st.Record; r != nil {
		out.Record = &RecordStateJSON{State: strings.ToLower(r.State.String()), Owner: r.Owner, DeliveryCount: r.DeliveryCount}
		if !r.LockDeadline.IsZero() {
			out.Record.LockDeadline = formatTime(r.LockDeadline)
		}
	}
	for _, e := range st.Events {
		out.Events = append(out.Events, storyEventJSON(e, offset))
	}
	return out, nil
}

func errNoStory(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoStory, fmt.Sprintf(format, args...))
}

// storyEventJSON is e as the story of offset shows it.
func storyEventJSON(e sharepartition.StoryEvent, offset int64) StoryEventJSON {
	ej := StoryEventJSON{Time: formatTime(e.Time), Event: e.Kind.String(), FirstOffset: e.FirstOffset,
		LastOffset: e.LastOffset, Member: e.Member}
	switch e.Kind {
	case sharepartition.StoryAcquired:
		ej.DeliveryCount = e.DeliveryCount
		ej.LockDeadline = formatTime(e.LockDeadline)
	case sharepartition.StoryRenewed:
		ej.LockDeadline = formatTime(e.LockDeadline)
	case sharepartition.StoryAcknowledged, sharepartition.StoryReleased:
		ej.Type = strings.ToLower(e.AckType.String())
	case sharepartition.StoryArchived, sharepartition.StorySessionClosed:
		ej.Reason = e.Reason.String()
	case sharepartition.StoryDeadLettered:
		part, off := e.DLQPartition, e.DLQOffsetOf(offset)
		ej.DLQTopic, ej.DLQPartition, ej.DLQOffset = e.DLQTopic, &part, &off
	}
	return ej
}

// storyLists are the archives and dead letters of sp's ring for GET
// /v1/share-groups/{group}: the newest, newest last, at most maxListed
// each (dead letters counted by record).
func storyLists(sp *sharepartition.SharePartition) ([]ArchivedJSON, []DeadLetterJSON) {
	archived, dead := []ArchivedJSON{}, []DeadLetterJSON{}
	if sp == nil {
		return archived, dead
	}
	for _, e := range sp.StoryKinds(sharepartition.StoryArchived, maxListed) {
		archived = append(archived, ArchivedJSON{FirstOffset: e.FirstOffset, LastOffset: e.LastOffset,
			Reason: e.Reason.String(), Time: formatTime(e.Time)})
	}
	for _, e := range sp.StoryKinds(sharepartition.StoryDeadLettered, maxListed) {
		for o := e.FirstOffset; o <= e.LastOffset; o++ {
			dead = append(dead, DeadLetterJSON{Offset: o, DLQTopic: e.DLQTopic, DLQPartition: e.DLQPartition,
				DLQOffset: e.DLQOffsetOf(o), Time: formatTime(e.Time)})
		}
	}
	return archived, dead
}

// serveRecordStory answers a record's story: 400 for a partition or offset
// that is not a number, 404 for an unknown group, topic or partition.
func serveRecordStory(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := strconv.ParseInt(r.PathValue("p"), 10, 32)
		if err != nil {
			writeError(w, http.StatusBadRequest, "partition %q is not a number", r.PathValue("p"))
			return
		}
		offset, err := strconv.ParseInt(r.PathValue("offset"), 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "offset %q is not a number", r.PathValue("offset"))
			return
		}
		out, err := RecordStory(s, r.PathValue("group"), r.PathValue("topic"), int32(p), offset)
		if err != nil {
			writeError(w, http.StatusNotFound, "%s", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}
