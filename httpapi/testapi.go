package httpapi

// The test control API (--enable-test-api, docs/cluster.md §8): it moves
// the broker clock, arms faults, and moves leaders, coordinators and
// nodes. Each move answers 200 with the changed entry in the shape of GET
// /v1/cluster once every node sees the change; 400 for a bad body, 404 for
// an unknown topic, partition or node, 409 for a node in the wrong state;
// nothing changes on an error.

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/faults"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Control is what the test API changes. Every method does its whole change
// or, with an error, none of it.
type Control interface {
	// Clock is the broker clock; the test API advances it when it is an
	// Advancer.
	Clock() locktimer.Clock
	// MoveLeader makes node lead partition of topic at the next leader
	// epoch and returns the partition's leadership after the move.
	// Errors: cluster.ErrUnknownPartition, ErrUnknownNode, ErrNodeDown.
	MoveLeader(topic string, partition, node int32) (cluster.Leadership, error)
	// MoveCoordinator makes node coordinate key of type typ. Errors:
	// cluster.ErrUnknownNode, ErrNodeDown.
	MoveCoordinator(typ cluster.CoordinatorType, key string, node int32) error
	// Coordinator is the node coordinating key of type typ.
	Coordinator(typ cluster.CoordinatorType, key string) int32
	// StopNode and StartNode stop and start node id. Errors:
	// cluster.ErrUnknownNode, ErrNodeDown, ErrNodeUp, ErrLastLiveNode, or
	// a listener that cannot bind again.
	StopNode(id int32) error
	StartNode(id int32) error
	// Faults lists the armed faults in the order they were armed.
	Faults() []faults.Fault
	// ArmFault validates and arms in, and returns it as armed (with its
	// ID and API name); an error says what is wrong with in.
	ArmFault(in faults.Spec) (faults.Fault, error)
	// ClearFaults disarms every fault and returns how many there were.
	ClearFaults() int
	// Producer appends a record (POST /v1/test/produce, produce.go).
	Producer
}

// Advancer is a clock that a test can move forward: locktimer.ManualClock
// and locktimer.OffsetClock. Advance must run every callback that became
// due before it returns, and return an error, moving nothing, when the
// clock may not go that far (locktimer.MaxTime).
type Advancer interface {
	Advance(d time.Duration) error
}

// maxBody bounds a test API request body.
const maxBody = 64 << 10

// testAPI serves /v1/test/.
type testAPI struct {
	state State
	ctl   Control
	log   *slog.Logger
}

// register adds the test-control endpoints; they exist only with a
// Control, so without one they answer 404.
func (t testAPI) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/test/clock", t.serveClock)
	mux.HandleFunc("POST /v1/test/clock/advance", t.serveClockAdvance)
	mux.HandleFunc("GET /v1/test/faults", t.serveFaultsList)
	mux.HandleFunc("POST /v1/test/faults", t.serveFaultsAdd)
	mux.HandleFunc("DELETE /v1/test/faults", t.serveFaultsClear)
	mux.HandleFunc("POST /v1/test/leaders", t.serveMoveLeader)
	mux.HandleFunc("POST /v1/test/coordinators", t.serveMoveCoordinator)
	mux.HandleFunc("POST /v1/test/nodes/{id}/stop", t.serveStopNode)
	mux.HandleFunc("POST /v1/test/nodes/{id}/start", t.serveStartNode)
	mux.HandleFunc("POST /v1/test/produce", t.serveProduce)
}

// decodeBody decodes a JSON body into v, refusing unknown fields; on
// failure it answers 400 naming the expected form and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "body: want %s: %v", example, err)
		return false
	}
	return true
}

// ClockJSON is the broker clock's reading.
type ClockJSON struct {
	Now string `json:"now"` // RFC 3339
}

func (t testAPI) clockJSON() ClockJSON {
	return ClockJSON{Now: t.ctl.Clock().Now().UTC().Format(time.RFC3339Nano)}
}

func (t testAPI) serveClock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, t.clockJSON())
}

// AdvanceJSON is the body of POST /v1/test/clock/advance.
type AdvanceJSON struct {
	Duration string `json:"duration"` // Go duration: "30s", "1m30s"
}

// serveClockAdvance moves the broker clock forward. Locks, member session
// timeouts, long-polls and retention all read that clock; timers that fall
// due have fired when the response is sent.
func (t testAPI) serveClockAdvance(w http.ResponseWriter, r *http.Request) {
	clock := t.ctl.Clock()
	adv, ok := clock.(Advancer)
	if !ok {
		writeError(w, http.StatusConflict, "the broker clock (%T) cannot be advanced", clock)
		return
	}
	var in AdvanceJSON
	if !decodeBody(w, r, &in, `{"duration":"30s"}`) {
		return
	}
	d, err := time.ParseDuration(in.Duration)
	if err != nil || d < 0 {
		writeError(w, http.StatusBadRequest, "duration %q: want a non-negative Go duration such as \"30s\"", in.Duration)
		return
	}
	if err := adv.Advance(d); err != nil {
		// clock-bounded: a jump that would pass locktimer.MaxTime is
		// refused rather than wrapping the clock backwards.
		writeError(w, http.StatusBadRequest, "duration %q: %v", in.Duration, err)
		return
	}
	t.log.Info("clock advanced by test API", "by", d, "now", clock.Now())
	writeJSON(w, http.StatusOK, t.clockJSON())
}

// MoveLeaderJSON is the body of POST /v1/test/leaders.
type MoveLeaderJSON struct {
	Topic     *string `json:"topic"`
	Partition *int32  `json:"partition"`
	Node      *int32  `json:"node"`
}

// MoveCoordinatorJSON is the body of POST /v1/test/coordinators: one of
// Group and TransactionalID, and Node.
type MoveCoordinatorJSON struct {
	Group           *string `json:"group"`
	TransactionalID *string `json:"transactional_id"`
	Node            *int32  `json:"node"`
}

func (t testAPI) serveMoveLeader(w http.ResponseWriter, r *http.Request) {
	const example = `{"topic":"t","partition":0,"node":1}`
	var in MoveLeaderJSON
	if !decodeBody(w, r, &in, example) {
		return
	}
	switch {
	case in.Topic == nil || in.Partition == nil || in.Node == nil:
		writeError(w, http.StatusBadRequest, "body: want %s: topic, partition and node are all needed", example)
		return
	case *in.Partition < 0:
		writeError(w, http.StatusBadRequest, "partition %d: want a partition index, 0 or more", *in.Partition)
		return
	}
	l, err := t.ctl.MoveLeader(*in.Topic, *in.Partition, *in.Node)
	if err != nil {
		writeMoveError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, LeadershipJSON{Topic: *in.Topic, Partition: *in.Partition, Leader: l.Leader, LeaderEpoch: l.Epoch})
}

func (t testAPI) serveMoveCoordinator(w http.ResponseWriter, r *http.Request) {
	const example = `{"group":"g","node":1} or {"transactional_id":"x","node":1}`
	var in MoveCoordinatorJSON
	if !decodeBody(w, r, &in, example) {
		return
	}
	typ, key := cluster.Group, in.Group
	if in.TransactionalID != nil {
		typ, key = cluster.Transaction, in.TransactionalID
	}
	switch {
	case (in.Group == nil) == (in.TransactionalID == nil) || in.Node == nil:
		writeError(w, http.StatusBadRequest, "body: want %s: one of group and transactional_id, and node", example)
		return
	case *key == "":
		writeError(w, http.StatusBadRequest, "body: want %s: an empty %s names nothing", example, typ)
		return
	}
	if err := t.ctl.MoveCoordinator(typ, *key, *in.Node); err != nil {
		writeMoveError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, CoordinatorJSON{Key: *key, Type: typ.String(), Node: t.ctl.Coordinator(typ, *key)})
}

func (t testAPI) serveStopNode(w http.ResponseWriter, r *http.Request) {
	t.serveNodeChange(w, r, t.ctl.StopNode)
}

func (t testAPI) serveStartNode(w http.ResponseWriter, r *http.Request) {
	t.serveNodeChange(w, r, t.ctl.StartNode)
}

// serveNodeChange runs change on the node the path names and answers the
// node as GET /v1/cluster lists it.
func (t testAPI) serveNodeChange(w http.ResponseWriter, r *http.Request, change func(int32) error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, "node %q: want a node ID", r.PathValue("id"))
		return
	}
	if err := change(int32(id)); err != nil {
		writeMoveError(w, err)
		return
	}
	for _, n := range t.state.Cluster().Nodes {
		if n.ID == int32(id) {
			writeJSON(w, http.StatusOK, n)
			return
		}
	}
}

// writeMoveError answers a refused move: 404 for what does not exist, 409
// for a node in the wrong state, 500 for a listener that cannot bind.
func writeMoveError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, cluster.ErrUnknownNode), errors.Is(err, cluster.ErrUnknownPartition):
		status = http.StatusNotFound
	case errors.Is(err, cluster.ErrNodeDown), errors.Is(err, cluster.ErrNodeUp), errors.Is(err, cluster.ErrLastLiveNode):
		status = http.StatusConflict
	}
	writeError(w, status, "%v", err)
}
