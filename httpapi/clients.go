package httpapi

// GET /v1/clients and GET /v1/clients/{instance}: the client instances
// pushing KIP-714 metrics and the latest value of each data point they
// pushed, as the clientmetrics store keeps them (client-metrics-json in
// docs/telemetry.md).

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/sharebroker/sharebroker/clientmetrics"
)

// ClientJSON is one client instance: who it is (the labels its series
// carry on /metrics), its connection, its pushes on the broker clock, its
// resource attributes and its metrics in name order.
type ClientJSON struct {
	InstanceID      string `json:"client_instance_id"` // Kafka's Uuid form
	ClientID        string `json:"client_id"`
	SoftwareName    string `json:"client_software_name"`
	SoftwareVersion string `json:"client_software_version"`
	SourceAddress   string `json:"client_source_address"`
	SourcePort      int    `json:"client_source_port"`
	Principal       string `json:"principal"`
	Listener        string `json:"listener"`
	PushIntervalMs  int64  `json:"push_interval_ms"`
	// FirstPush, LastPush and Expires are the broker clock (RFC 3339 with
	// nanoseconds): Expires is when the instance ages out unless it
	// pushes again.
	FirstPush     string             `json:"first_push"`
	LastPush      string             `json:"last_push"`
	Expires       string             `json:"expires"`
	Pushes        int64              `json:"pushes"`
	DroppedPoints int64              `json:"dropped_points"`
	Resource      map[string]string  `json:"resource"`
	Metrics       []ClientMetricJSON `json:"metrics"`
}

// ClientMetricJSON is one series: an OTLP metric and its data point's
// attributes. Value is a gauge's, counter's or up-down counter's; Count,
// Sum and Buckets a histogram's (buckets cumulative, as Prometheus counts
// them); Count, Sum and Quantiles a summary's. Time is the data point's
// time on the client's clock, Updated the broker clock at the push that
// last changed it.
type ClientMetricJSON struct {
	Name        string            `json:"name"`
	Kind        string            `json:"kind"` // gauge, counter, updowncounter, histogram, summary
	Description string            `json:"description,omitempty"`
	Unit        string            `json:"unit,omitempty"`
	Attributes  map[string]string `json:"attributes"`
	Value       *JSONFloat        `json:"value,omitempty"`
	Count       *uint64           `json:"count,omitempty"`
	Sum         *JSONFloat        `json:"sum,omitempty"`
	Buckets     []BucketJSON      `json:"buckets,omitempty"`
	Quantiles   []QuantileJSON    `json:"quantiles,omitempty"`
	Time        string            `json:"time,omitempty"`
	Updated     string            `json:"updated"`
}

// BucketJSON is a histogram bucket: the observations at or below LE,
// cumulative. The last bucket's LE is "+Inf".
type BucketJSON struct {
	LE    JSONFloat `json:"le"`
	Count uint64    `json:"count"`
}

// QuantileJSON is one quantile of a summary.
type QuantileJSON struct {
	Quantile JSONFloat `json:"quantile"`
	Value    JSONFloat `json:"value"`
}

// JSONFloat is a number that may be NaN or infinite, which JSON numbers
// cannot be: those are written as the strings "NaN", "+Inf" and "-Inf",
// as Prometheus writes them.
type JSONFloat float64

// MarshalJSON writes f as a number, or as a string when it is not finite.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *JSONFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = JSONFloat(math.NaN())
	case `"+Inf"`:
		*f = JSONFloat(math.Inf(1))
	case `"-Inf"`:
		*f = JSONFloat(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return fmt.Errorf("not a number: %s", b)
		}
		*f = JSONFloat(v)
	}
	return nil
}

// serveClients lists every client instance kept; enabled says whether
// the broker keeps client metrics (telemetry on), as GET /v1/acls says
// whether authorization is.
func serveClients(store *clientmetrics.Store) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		out := []ClientJSON{}
		if store != nil {
			for _, in := range store.Instances() {
				out = append(out, clientJSON(in))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"enabled": store != nil, "clients": out})
	}
}

// serveClient answers one client instance by its ID in Kafka's Uuid form:
// 400 for an ID that is not one, 404 for one not kept.
func serveClient(store *clientmetrics.Store) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw := r.PathValue("instance")
		id, err := clientmetrics.ParseInstanceID(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		var in clientmetrics.Instance
		ok := false
		if store != nil {
			in, ok = store.Instance(id)
		}
		if !ok {
			writeError(w, http.StatusNotFound, "client instance %s not found", raw)
			return
		}
		writeJSON(w, http.StatusOK, clientJSON(in))
	}
}

func clientJSON(in clientmetrics.Instance) ClientJSON {
	c := in.Client
	out := ClientJSON{InstanceID: clientmetrics.FormatInstanceID(c.InstanceID), ClientID: c.ClientID,
		SoftwareName: c.SoftwareName, SoftwareVersion: c.SoftwareVersion, SourceAddress: c.SourceAddress,
		SourcePort: c.SourcePort, Principal: c.Principal, Listener: c.Listener, PushIntervalMs: in.Interval.Milliseconds(),
		FirstPush: formatTime(in.FirstPush), LastPush: formatTime(in.LastPush), Expires: formatTime(in.Expires),
		Pushes: in.Pushes, DroppedPoints: in.DroppedPoints, Resource: attrMap(in.Resource),
		Metrics: make([]ClientMetricJSON, 0, len(in.Series))}
	for i := range in.Series {
		out.Metrics = append(out.Metrics, clientMetricJSON(&in.Series[i]))
	}
	return out
}

func clientMetricJSON(s *clientmetrics.Series) ClientMetricJSON {
	m := ClientMetricJSON{Name: s.Name, Kind: s.Kind.String(), Description: s.Description, Unit: s.Unit,
		Attributes: attrMap(s.Attrs), Updated: formatTime(s.Updated)}
	if !s.Time.IsZero() {
		m.Time = formatTime(s.Time)
	}
	switch s.Kind {
	case clientmetrics.Histogram, clientmetrics.Summary:
		count, sum := s.Count, JSONFloat(s.Sum)
		m.Count, m.Sum = &count, &sum
		var cum uint64
		for i, n := range s.Buckets {
			cum += n
			le := math.Inf(1)
			if i < len(s.Bounds) {
				le = s.Bounds[i]
			}
			m.Buckets = append(m.Buckets, BucketJSON{LE: JSONFloat(le), Count: cum})
		}
		for _, q := range s.Quantiles {
			m.Quantiles = append(m.Quantiles, QuantileJSON{Quantile: JSONFloat(q.Quantile), Value: JSONFloat(q.Value)})
		}
	default:
		v := JSONFloat(s.Value)
		m.Value = &v
	}
	return m
}

func attrMap(attrs []clientmetrics.Attr) map[string]string {
	out := make(map[string]string, len(attrs))
	for _, a := range attrs {
		out[a.Key] = a.Value
	}
	return out
}
