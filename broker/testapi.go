package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Advancer is a clock that a test can move forward: locktimer.ManualClock
// and locktimer.OffsetClock. Advance must run every callback that became
// due before it returns.
type Advancer interface {
	Advance(d time.Duration)
}

// maxTestAPIBody bounds a test API request body.
const maxTestAPIBody = 64 << 10

// registerTestAPI adds the test-control endpoints; they exist only with
// Config.EnableTestAPI, so without it they answer 404.
func (b *Broker) registerTestAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/test/clock", b.serveClock)
	mux.HandleFunc("POST /v1/test/clock/advance", b.serveClockAdvance)
	mux.HandleFunc("GET /v1/test/faults", b.serveFaultsList)
	mux.HandleFunc("POST /v1/test/faults", b.serveFaultsAdd)
	mux.HandleFunc("DELETE /v1/test/faults", b.serveFaultsClear)
	mux.HandleFunc("POST /v1/test/leaders", b.serveMoveLeader)
	mux.HandleFunc("POST /v1/test/coordinators", b.serveMoveCoordinator)
	mux.HandleFunc("POST /v1/test/nodes/{id}/stop", b.serveStopNode)
	mux.HandleFunc("POST /v1/test/nodes/{id}/start", b.serveStartNode)
}

// decodeTestAPIBody decodes a JSON body into v, refusing unknown fields;
// on failure it answers 400 naming the expected form and returns false.
func decodeTestAPIBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxTestAPIBody))
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

func (b *Broker) clockJSON() ClockJSON {
	return ClockJSON{Now: b.clock.Now().UTC().Format(time.RFC3339Nano)}
}

func (b *Broker) serveClock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, b.clockJSON())
}

// AdvanceJSON is the body of POST /v1/test/clock/advance.
type AdvanceJSON struct {
	Duration string `json:"duration"` // Go duration: "30s", "1m30s"
}

// serveClockAdvance moves the broker clock forward. Locks, member session
// timeouts, long-polls and retention all read that clock; timers that fall
// due have fired when the response is sent.
func (b *Broker) serveClockAdvance(w http.ResponseWriter, r *http.Request) {
	adv, ok := b.clock.(Advancer)
	if !ok {
		writeError(w, http.StatusConflict, "the broker clock (%T) cannot be advanced", b.clock)
		return
	}
	var in AdvanceJSON
	if !decodeTestAPIBody(w, r, &in, `{"duration":"30s"}`) {
		return
	}
	d, err := time.ParseDuration(in.Duration)
	if err != nil || d < 0 {
		writeError(w, http.StatusBadRequest, "duration %q: want a non-negative Go duration such as \"30s\"", in.Duration)
		return
	}
	adv.Advance(d)
	b.log.Info("clock advanced by test API", "by", d, "now", b.clock.Now())
	writeJSON(w, http.StatusOK, b.clockJSON())
}
