package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/faults"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// fake is a broker as the HTTP listener sees it, without a socket behind
// it: the handlers are tested here on their own, and over a real broker in
// package broker.
type fake struct {
	ready  bool
	store  *storage.Store
	clock  locktimer.Clock
	parts  []SharePartition
	moved  []string
	faults []faults.Fault
	// stories are the share partitions of partition 0 of topic "t" the
	// record-story tests read, by group.
	stories map[string]*sharepartition.SharePartition
}

func (f *fake) Ready() bool                             { return f.ready }
func (f *fake) Topics() []*storage.Topic                { return f.store.Topics() }
func (f *fake) ACLs() ([]acl.Binding, bool)             { return nil, false }
func (f *fake) ShareGroupIDs() []string                 { return nil }
func (f *fake) SharePartitions(string) []SharePartition { return f.parts }
func (f *fake) CAPEM() []byte                           { return nil }
func (f *fake) ShareStory(group, topic string, p int32) (*sharepartition.SharePartition, bool) {
	if t := f.store.Topic(topic); t == nil || t.Partition(p) == nil {
		return nil, false
	}
	return f.stories[group], true
}
func (f *fake) Clock() locktimer.Clock { return f.clock }
func (f *fake) DescribeShareGroups(ids []string) []group.ShareDescribedGroup {
	out := make([]group.ShareDescribedGroup, len(ids))
	for i, id := range ids {
		out[i] = group.ShareDescribedGroup{GroupID: id, Err: fmt.Errorf("no group %s", id)}
	}
	return out
}
func (f *fake) Cluster() ClusterJSON {
	return ClusterJSON{Nodes: []NodeJSON{{ID: 1, Addr: "h:1", Up: true}}}
}
func (f *fake) MoveLeader(topic string, p, node int32) (cluster.Leadership, error) {
	if topic != "t" {
		return cluster.Leadership{}, fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, p)
	}
	f.moved = append(f.moved, fmt.Sprintf("leader %s-%d %d", topic, p, node))
	return cluster.Leadership{Leader: node, Epoch: 1}, nil
}
func (f *fake) MoveCoordinator(typ cluster.CoordinatorType, key string, node int32) error {
	f.moved = append(f.moved, fmt.Sprintf("%s %s %d", typ, key, node))
	return nil
}
func (f *fake) Coordinator(cluster.CoordinatorType, string) int32 { return 2 }
func (f *fake) StopNode(id int32) error {
	if id == 1 {
		return fmt.Errorf("%w: %d", cluster.ErrLastLiveNode, id)
	}
	return fmt.Errorf("%w: %d", cluster.ErrUnknownNode, id)
}
func (f *fake) StartNode(id int32) error { return nil }
func (f *fake) Faults() []faults.Fault   { return f.faults }
func (f *fake) ArmFault(in faults.Spec) (faults.Fault, error) {
	if in.APIKey == nil {
		return faults.Fault{}, fmt.Errorf("api_key is required")
	}
	armed := faults.Fault{ID: int64(len(f.faults) + 1), API: "Produce", APIKey: *in.APIKey, Remaining: in.Count, Drop: in.Drop}
	f.faults = append(f.faults, armed)
	return armed, nil
}
func (f *fake) ClearFaults() int { n := len(f.faults); f.faults = nil; return n }

func newFake(t *testing.T, testAPI bool) (*fake, *httptest.Server) {
	f := &fake{ready: true, store: storage.NewStore(), clock: locktimer.NewManualClock(time.Unix(1000, 0))}
	cfg := Config{Metrics: prometheus.NewRegistry(), State: f}
	if testAPI {
		cfg.Control = f
	}
	srv := httptest.NewServer(Handler(cfg))
	t.Cleanup(srv.Close)
	return f, srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// Each route answers with the status the API promises, and the test API
// is absent without a Control.
func TestRoutes(t *testing.T) {
	f, srv := newFake(t, true)
	_, plain := newFake(t, false)
	for _, tc := range []struct {
		srv          *httptest.Server
		method, path string
		body         string
		status       int
	}{
		{srv, "GET", "/metrics", "", 200},
		{srv, "GET", "/healthz", "", 200},
		{srv, "GET", "/readyz", "", 200},
		{srv, "GET", "/v1/topics", "", 200},
		{srv, "GET", "/v1/groups", "", 200},
		{srv, "GET", "/v1/cluster", "", 200},
		{srv, "GET", "/v1/acls", "", 200},
		{srv, "GET", "/v1/share-groups/g", "", 404},
		{srv, "GET", "/v1/tls/ca.pem", "", 404},
		{srv, "GET", "/v1/test/clock", "", 200},
		{srv, "GET", "/v1/test/clock/advance", "", 405},
		{srv, "POST", "/v1/test/clock/advance", `{"duration":"-1s"}`, 400},
		{srv, "POST", "/v1/test/clock/advance", `{"seconds":3}`, 400},
		{srv, "POST", "/v1/test/clock/advance", `{"duration":"30s"}`, 200},
		{srv, "POST", "/v1/test/leaders", `{"topic":"t","partition":0}`, 400},
		{srv, "POST", "/v1/test/leaders", `{"topic":"u","partition":0,"node":1}`, 404},
		{srv, "POST", "/v1/test/leaders", `{"topic":"t","partition":0,"node":2}`, 200},
		{srv, "POST", "/v1/test/coordinators", `{"group":"g","transactional_id":"x","node":1}`, 400},
		{srv, "POST", "/v1/test/coordinators", `{"group":"","node":1}`, 400},
		{srv, "POST", "/v1/test/coordinators", `{"group":"g","node":2}`, 200},
		{srv, "POST", "/v1/test/nodes/x/stop", "", 400},
		{srv, "POST", "/v1/test/nodes/1/stop", "", 409},
		{srv, "POST", "/v1/test/nodes/7/stop", "", 404},
		{srv, "POST", "/v1/test/nodes/1/start", "", 200},
		{srv, "POST", "/v1/test/faults", `{"api_key":0,"drop":true,"id":4}`, 400},
		{srv, "POST", "/v1/test/faults", `{}`, 400},
		{srv, "POST", "/v1/test/faults", `{"api_key":0,"drop":true}`, 201},
		{srv, "GET", "/v1/test/faults", "", 200},
		{srv, "DELETE", "/v1/test/faults", "", 200},
		{plain, "GET", "/v1/test/clock", "", 404},
		{plain, "POST", "/v1/test/faults", `{"api_key":0,"drop":true}`, 404},
		{plain, "POST", "/v1/test/nodes/1/start", "", 404},
	} {
		if status, out := do(t, tc.srv, tc.method, tc.path, tc.body); status != tc.status {
			t.Errorf("%s %s %s (test API %v): %d %s, want %d", tc.method, tc.path, tc.body, tc.srv == srv, status, out, tc.status)
		}
	}
	if want := "leader t-0 2,group g 2"; strings.Join(f.moved, ",") != want {
		t.Errorf("moves %q, want %q", f.moved, want)
	}
	if got := f.clock.Now(); !got.Equal(time.Unix(1030, 0)) {
		t.Errorf("clock at %v after one 30s advance", got)
	}
	f.ready = false
	if status, _ := do(t, srv, "GET", "/readyz", ""); status != http.StatusServiceUnavailable {
		t.Errorf("readyz when not ready: %d, want 503", status)
	}
}

// A share group's windows come out in topic and partition order, with
// their ranges in the API's form.
func TestShareGroupWindows(t *testing.T) {
	f, srv := newFake(t, false)
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.parts = []SharePartition{
		{Topic: "b", Partition: 0, Leader: 1},
		{Topic: "a", Partition: 1, Leader: 2, Window: sharepartition.Snapshot{SPSO: 3, SPEO: 4, InFlight: 2, NextFetchOffset: 5,
			Ranges: []sharepartition.RangeState{{FirstOffset: 3, LastOffset: 4, State: sharepartition.Acquired, Owner: "m", DeliveryCount: 1, LockDeadline: deadline}}}},
		{Topic: "a", Partition: 0, Leader: 1},
	}
	status, body := do(t, srv, "GET", "/v1/share-groups/g", "")
	if status != http.StatusOK {
		t.Fatalf("GET: %d %s", status, body)
	}
	var got ShareGroupJSON
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Group != nil || len(got.Partitions) != 3 {
		t.Fatalf("%s", body)
	}
	for i, want := range []string{"a-0", "a-1", "b-0"} {
		if p := got.Partitions[i]; fmt.Sprintf("%s-%d", p.Topic, p.Partition) != want {
			t.Errorf("partition %d is %s-%d, want %s", i, p.Topic, p.Partition, want)
		}
	}
	want := RangeJSON{FirstOffset: 3, LastOffset: 4, State: "ACQUIRED", Owner: "m", DeliveryCount: 1, LockDeadline: "2030-01-02T03:04:05Z"}
	if p := got.Partitions[1]; p.Leader != 2 || p.SPSO != 3 || p.InFlightRecords != 2 || len(p.Ranges) != 1 || p.Ranges[0] != want {
		t.Errorf("a-1: %+v", p)
	}
}
