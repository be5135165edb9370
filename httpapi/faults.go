package httpapi

// Faults under /v1/test/faults: arm, list, clear. Which requests a fault
// matches is package faults'; what it does to them is the broker's. Here
// is only their HTTP form.

import (
	"net/http"

	"github.com/sharebroker/sharebroker/faults"
)

// FaultJSON is one fault: the body of POST /v1/test/faults and an entry of
// GET /v1/test/faults. Exactly one of ErrorCode, Latency and Drop is set.
type FaultJSON struct {
	ID        int64  `json:"id,omitempty"`  // answers only
	API       string `json:"api,omitempty"` // answers only: the key's name
	APIKey    *int16 `json:"api_key"`
	Count     int    `json:"count,omitempty"` // requests it applies to; default 1; in answers, those left
	Topic     string `json:"topic,omitempty"`
	Group     string `json:"group,omitempty"`
	ErrorCode int16  `json:"error_code,omitempty"`
	Latency   string `json:"latency,omitempty"` // Go duration, at most 30s
	Drop      bool   `json:"drop,omitempty"`
}

// faultJSON is f as the test API shows it.
func faultJSON(f faults.Fault) FaultJSON {
	key := f.APIKey
	out := FaultJSON{ID: f.ID, API: f.API, APIKey: &key, Count: f.Remaining,
		Topic: f.Topic, Group: f.Group, ErrorCode: f.ErrorCode, Drop: f.Drop}
	if f.Latency > 0 {
		out.Latency = f.Latency.String()
	}
	return out
}

func (t testAPI) serveFaultsList(w http.ResponseWriter, _ *http.Request) {
	armed := t.ctl.Faults()
	out := make([]FaultJSON, 0, len(armed))
	for _, f := range armed {
		out = append(out, faultJSON(f))
	}
	writeJSON(w, http.StatusOK, out)
}

func (t testAPI) serveFaultsAdd(w http.ResponseWriter, r *http.Request) {
	var in FaultJSON
	if !decodeBody(w, r, &in, `{"api_key":0,"count":3,"error_code":6}`) {
		return
	}
	if in.ID != 0 || in.API != "" {
		writeError(w, http.StatusBadRequest, "id and api are set by the broker")
		return
	}
	f, err := t.ctl.ArmFault(faults.Spec{APIKey: in.APIKey, Count: in.Count, Topic: in.Topic, Group: in.Group,
		ErrorCode: in.ErrorCode, Latency: in.Latency, Drop: in.Drop})
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	t.log.Info("fault armed by test API", "fault_id", f.ID, "api", f.API, "count", f.Remaining,
		"topic", f.Topic, "group", f.Group, "error_code", f.ErrorCode, "latency", f.Latency, "drop", f.Drop)
	writeJSON(w, http.StatusCreated, faultJSON(f))
}

func (t testAPI) serveFaultsClear(w http.ResponseWriter, _ *http.Request) {
	n := t.ctl.ClearFaults()
	t.log.Info("faults cleared by test API", "count", n)
	writeJSON(w, http.StatusOK, map[string]int{"cleared": n})
}
