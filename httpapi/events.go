package httpapi

// Live updates for the console (**console-live-bound**): GET
// /v1/events?watch=PATH[&watch=PATH...] is a text/event-stream that sends
// each watched GET endpoint's JSON when it changed, and the broker clock
// when it moved. The work is bounded per open console and nothing runs
// without one:
//
//   - every watchTick (500 ms) the stream builds each watched view once,
//     through the same handler a plain GET runs, and sends it only if its
//     bytes (less a top-level "now", the clock reading) differ from the
//     last sent: an idle group costs one build and one hash per tick;
//   - a view that is slow to build is rebuilt less often: the stream
//     waits at least buildShare times as long as its last round of
//     builds took, so one open console spends at most a tenth of one
//     core on its views, however large (a share partition of 10,000
//     ranges builds in about 150 ms: one update every 1.5 s);
//   - at most maxWatches paths per stream and maxStreams streams per
//     listener; one more stream is refused with 503 rather than queued;
//   - the stream ends when the client goes (its request context), when
//     the server shuts down, or after streamLifetime, after which the
//     console reconnects (so a forgotten tab cannot hold a stream for ever).
//
// Browsers' EventSource cannot send an Authorization header, so the
// console reads this stream with fetch() and parses the event-stream
// format itself.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

const (
	watchTick      = 500 * time.Millisecond
	buildShare     = 10
	maxWatches     = 4
	maxStreams     = 16
	streamLifetime = 10 * time.Minute
	// writeWait bounds each write to a stream, whatever the server's own
	// write timeout: a stream lives longer than any request should.
	writeWait = 10 * time.Second
)

// streams counts the open event streams of one handler.
type streams struct{ open atomic.Int32 }

// watchable reports why path cannot be watched, "" when it can: a GET
// JSON endpoint under /v1/ that the mux serves, not the stream itself,
// the test API or the CA.
func watchable(mux *http.ServeMux, path string) (*http.Request, string) {
	u, err := url.Parse(path)
	switch {
	case err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/v1/"):
		return nil, "want a path under /v1/"
	case strings.HasPrefix(u.Path, "/v1/events"), strings.HasPrefix(u.Path, "/v1/test/"), u.Path == "/v1/tls/ca.pem":
		return nil, "not a JSON view"
	}
	req, err := http.NewRequest(http.MethodGet, u.RequestURI(), nil)
	if err != nil {
		return nil, err.Error()
	}
	if _, pattern := mux.Handler(req); pattern == "" {
		return nil, "no such endpoint"
	}
	return req, ""
}

// viewEvent is the data of one "view" event: the watched path, the
// status its GET answered and its JSON body.
type viewEvent struct {
	Path   string          `json:"path"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// capture is a ResponseWriter that keeps what a handler writes.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header         { return c.header }
func (c *capture) Write(b []byte) (int, error) { return c.body.Write(b) }
func (c *capture) WriteHeader(status int)      { c.status = status }

// viewHash is the hash of a view's JSON without its top-level "now": the
// clock alone moving is sent as a clock event, not as a changed view.
func viewHash(body []byte) uint64 {
	h := fnv.New64a()
	var top map[string]json.RawMessage
	if bytes.Contains(body, []byte(`"now"`)) && json.Unmarshal(body, &top) == nil {
		if _, ok := top["now"]; ok {
			delete(top, "now")
			body, _ = json.Marshal(top)
		}
	}
	h.Write(body)
	return h.Sum64()
}

func serveEvents(mux *http.ServeMux, s State, open *streams) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		paths := r.URL.Query()["watch"]
		if len(paths) == 0 || len(paths) > maxWatches {
			writeError(w, http.StatusBadRequest, "want 1 to %d watch=PATH parameters, got %d", maxWatches, len(paths))
			return
		}
		reqs := make([]*http.Request, len(paths))
		for i, p := range paths {
			req, why := watchable(mux, p)
			if req == nil {
				writeError(w, http.StatusBadRequest, "watch %q: %s", p, why)
				return
			}
			req = req.WithContext(r.Context())
			req.Header = r.Header.Clone() // the same credentials as the stream's own request
			reqs[i] = req
		}
		if open.open.Add(1) > maxStreams {
			open.open.Add(-1)
			writeError(w, http.StatusServiceUnavailable, "%d event streams are open already; close a console", maxStreams)
			return
		}
		defer open.open.Add(-1)

		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		send := func(event string, data []byte) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
				return false
			}
			return rc.Flush() == nil
		}

		last := make([]uint64, len(reqs))
		var lastNow time.Time
		tick := time.NewTimer(watchTick)
		defer tick.Stop()
		end := time.NewTimer(streamLifetime)
		defer end.Stop()
		for first := true; ; first = false {
			now := s.Clock().Now()
			if first || !now.Equal(lastNow) {
				lastNow = now
				data, _ := json.Marshal(ClockJSON{Now: now.UTC().Format(time.RFC3339Nano)})
				if !send("clock", data) {
					return
				}
			}
			built := time.Now()
			for i, req := range reqs {
				c := &capture{header: http.Header{}, status: http.StatusOK}
				mux.ServeHTTP(c, req)
				var body bytes.Buffer
				if json.Compact(&body, c.body.Bytes()) != nil {
					body.Reset()
					data, _ := json.Marshal(map[string]string{"error": strings.TrimSpace(c.body.String())})
					body.Write(data)
				}
				h := viewHash(body.Bytes()) ^ uint64(c.status)
				if !first && h == last[i] {
					continue
				}
				last[i] = h
				data, _ := json.Marshal(viewEvent{Path: paths[i], Status: c.status, Body: body.Bytes()})
				if !send("view", data) {
					return
				}
			}
			tick.Reset(max(watchTick, buildShare*time.Since(built)))
			select {
			case <-r.Context().Done():
				return
			case <-end.C:
				return
			case <-tick.C:
			}
		}
	}
}
