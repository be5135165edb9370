package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
)

// storyFake is a fake with topic "t" and group "g"'s share partition of
// t-0, on which member m acquired 0-4, rejected 2, and 2's dead letter
// went to dlq.t-0 at offset 7.
func storyFake(t *testing.T) (*fake, *httptest.Server) {
	f, srv := newFake(t, false)
	if _, err := f.store.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	clock := f.clock.(*locktimer.ManualClock)
	timers := locktimer.NewService(clock, nil)
	t.Cleanup(timers.Close)
	sp := sharepartition.New(sharepartition.Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 5,
		MaxRecordLocks: 100, RenewEnabled: true, StoryEvents: 16}, timers)
	sp.InitializeIfNeeded(0)
	if _, err := sp.Acquire(sharepartition.AcquireRequest{Member: "m", Batches: []sharepartition.LogBatch{{BaseOffset: 0, LastOffset: 4}},
		MaxRecords: 5}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	types := []sharepartition.AckType{sharepartition.AckRenew, sharepartition.AckRenew, sharepartition.AckReject,
		sharepartition.AckRenew, sharepartition.AckRenew}
	if err := sp.Acknowledge("m", []sharepartition.AckBatch{{FirstOffset: 0, LastOffset: 4, Types: types}}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	sp.DeadLettered(2, 2, "dlq.t", 0, 7, clock.Now())
	f.stories = map[string]*sharepartition.SharePartition{"g": sp}
	f.parts = []SharePartition{{Topic: "t", Partition: 0, Leader: 1, Window: sp.Snapshot(), Lag: 3, Share: sp}}
	return f, srv
}

// record-story-json: the answers' statuses: 400 for a partition or offset
// that is not a number, 404 with the error JSON for an unknown group,
// topic or partition, 200 with no events and a null record for an offset
// nothing happened to.
func TestRecordStoryStatuses(t *testing.T) {
	_, srv := storyFake(t)
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/v1/share-groups/g/topics/t/partitions/x/records/1", 400, `"error": "partition \"x\" is not a number"`},
		{"/v1/share-groups/g/topics/t/partitions/0/records/1.5", 400, `"error": "offset \"1.5\" is not a number"`},
		{"/v1/share-groups/g/topics/u/partitions/0/records/1", 404, `"error": "no such share partition: topic \"u\" has no partition 0"`},
		{"/v1/share-groups/g/topics/t/partitions/1/records/1", 404, `"error"`},
		{"/v1/share-groups/h/topics/t/partitions/0/records/1", 404, `"error": "no such share partition: share group \"h\" not found"`},
		{"/v1/share-groups/g/topics/t/partitions/0/records/99", 200, `"record": null`},
	} {
		status, body := do(t, srv, "GET", tc.path, "")
		if status != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s: %d %s; want %d with %s", tc.path, status, body, tc.status, tc.body)
		}
	}
}

// record-story-json: a record's story in the API's form: events in order
// with their names and only the fields that apply, the dead-letter offset
// of this record, the record's state now.
func TestRecordStoryJSON(t *testing.T) {
	_, srv := storyFake(t)
	status, body := do(t, srv, "GET", "/v1/share-groups/g/topics/t/partitions/0/records/2", "")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var got struct {
		Now    string                       `json:"now"`
		Record json.RawMessage              `json:"record"`
		Events []map[string]json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	var rec RecordStateJSON // still in the window: 0 and 1 are acquired
	if err := json.Unmarshal(got.Record, &rec); err != nil || got.Now != "1970-01-01T00:16:41Z" ||
		rec != (RecordStateJSON{State: "archived", DeliveryCount: 1}) {
		t.Fatalf("now %s record %s", got.Now, got.Record)
	}
	var lines []string
	for _, e := range got.Events {
		line := string(e["event"])
		for _, k := range []string{"member", "delivery_count", "lock_deadline", "type", "reason", "dlq_topic", "dlq_partition", "dlq_offset"} {
			if v, ok := e[k]; ok {
				line += " " + k + "=" + string(v)
			}
		}
		lines = append(lines, line)
	}
	want := []string{
		`"acquired" member="m" delivery_count=1 lock_deadline="1970-01-01T00:17:10Z"`,
		`"acknowledged" member="m" type="reject"`,
		`"archived" reason="rejected"`,
		`"dead_lettered" dlq_topic="dlq.t" dlq_partition=0 dlq_offset=7`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// A neighbour still in the window shows its state and its renewal.
	_, body = do(t, srv, "GET", "/v1/share-groups/g/topics/t/partitions/0/records/3", "")
	var st RecordStoryJSON
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if r := st.Record; r == nil || *r != (RecordStateJSON{State: "acquired", Owner: "m", DeliveryCount: 1, LockDeadline: "1970-01-01T00:17:11Z"}) {
		t.Fatalf("record 3: %+v", st.Record)
	}
	if n := len(st.Events); n != 2 || st.Events[1].Event != "renewed" || st.Truncated {
		t.Fatalf("story of 3: %+v", st)
	}
}

// record-story-json: the share group's answer carries the broker clock,
// each share partition's lag, and its archives and dead letters.
func TestShareGroupListsArchivesAndDeadLetters(t *testing.T) {
	_, srv := storyFake(t)
	status, body := do(t, srv, "GET", "/v1/share-groups/g", "")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var got ShareGroupJSON
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	p := got.Partitions[0]
	wantArchived := []ArchivedJSON{{FirstOffset: 2, LastOffset: 2, Reason: "rejected", Time: "1970-01-01T00:16:41Z"}}
	wantDead := []DeadLetterJSON{{Offset: 2, DLQTopic: "dlq.t", DLQPartition: 0, DLQOffset: 7, Time: "1970-01-01T00:16:41Z"}}
	if got.Now != "1970-01-01T00:16:41Z" || p.Lag != 3 || !equalJSON(p.Archived, wantArchived) || !equalJSON(p.DeadLetters, wantDead) {
		t.Fatalf("%s", body)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
