package metrics

// What clients report about themselves through KIP-714 telemetry, read from
// the clientmetrics store at scrape time (client-metrics-prometheus in
// docs/telemetry.md). Every data point a client pushed becomes one series:
//
//   - the family is ClientPrefix and the OTLP metric name with each
//     character Prometheus does not allow in a name turned into "_" and runs
//     of "_" made one (the OpenTelemetry Prometheus compatibility rules);
//     a monotonic sum is a counter and ends in "_total";
//   - its labels are the client's (client_instance_id, client_id,
//     client_software_name, client_software_version) and the data point's
//     attributes, their keys turned into label names the same way; an
//     attribute whose label name is already taken (one of the client's, or
//     le or quantile) is prefixed "attr_";
//   - a series that /metrics cannot show beside the others is left out:
//     its family already has another type (the first instance, in ID
//     order, decides), or its name is one a histogram or summary family
//     writes (_count, _sum, _bucket), or another series of its family has
//     the same labels. The JSON API (GET /v1/clients) still shows it.
//
// The store's own counts and one info series per client are under
// ClientsPrefix, which no client family can take: the character after
// "sharebroker_client" is "_" in every client family.

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/clientmetrics"
)

// ClientPrefix begins the name of every family of client metrics;
// ClientsPrefix the store's own metrics and the per-client info series.
const (
	ClientPrefix  = "sharebroker_client_"
	ClientsPrefix = "sharebroker_clients"
)

// The client labels every client series carries (KIP-714's broker-added
// metadata, the ones that tell clients apart).
var clientLabels = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version"}

// The info series of each client: its connection's details and its
// resource attributes, value 1, to join on client_instance_id.
var infoLabels = append(slices.Clone(clientLabels), "client_source_address", "client_source_port", "principal", "listener")

var (
	descClientsInstances = prometheus.NewDesc(ClientsPrefix,
		"Client instances whose KIP-714 metrics are kept.", nil, nil)
	descClientsEvicted = prometheus.NewDesc(ClientsPrefix+"_evicted_total",
		"Client instances removed to make room for a new one at the bound on instances kept.", nil, nil)
	descClientsExpired = prometheus.NewDesc(ClientsPrefix+"_expired_total",
		"Client instances removed because they stopped pushing metrics.", nil, nil)
	descClientsDropped = prometheus.NewDesc(ClientsPrefix+"_points_dropped_total",
		"Client data points not kept: a new series beyond the bound on series per instance, or a metric name too long.", nil, nil)
	descClientsInvalid = prometheus.NewDesc(ClientsPrefix+"_payloads_invalid_total",
		"Pushed telemetry payloads refused as not OTLP metrics (answered INVALID_RECORD).", nil, nil)
)

// clientCollector reads the clientmetrics store when the registry is
// scraped. It describes nothing (an unchecked collector): its families
// are whatever the clients pushed.
type clientCollector struct{ store *clientmetrics.Store }

func (c *clientCollector) Describe(chan<- *prometheus.Desc) {}

func (c *clientCollector) Collect(ch chan<- prometheus.Metric) {
	instances := c.store.Instances()
	st := c.store.Stats()
	ch <- prometheus.MustNewConstMetric(descClientsInstances, prometheus.GaugeValue, float64(len(instances)))
	ch <- prometheus.MustNewConstMetric(descClientsEvicted, prometheus.CounterValue, float64(st.Evicted))
	ch <- prometheus.MustNewConstMetric(descClientsExpired, prometheus.CounterValue, float64(st.Expired))
	ch <- prometheus.MustNewConstMetric(descClientsDropped, prometheus.CounterValue, float64(st.DroppedPoints))
	ch <- prometheus.MustNewConstMetric(descClientsInvalid, prometheus.CounterValue, float64(st.Invalid))
	if len(instances) == 0 {
		return
	}
	for i := range instances {
		collectInfo(ch, &instances[i])
	}
	fams := planFamilies(instances)
	for i := range instances {
		in := &instances[i]
		values := clientValues(in)
		for j := range in.Series {
			s := &in.Series[j]
			f := fams[familyName(s)]
			if f == nil || f.typ != promType(s.Kind) || f.dropped {
				continue
			}
			names, vals := seriesLabels(s, values)
			key := strings.Join(names, "\xff") + "\xfe" + strings.Join(vals, "\xff")
			if _, dup := f.seen[key]; dup {
				continue
			}
			f.seen[key] = struct{}{}
			if m, err := constMetric(prometheus.NewDesc(f.name, f.help, names, nil), s, vals); err == nil {
				ch <- m
			}
		}
	}
}

// collectInfo sends in's info series.
func collectInfo(ch chan<- prometheus.Metric, in *clientmetrics.Instance) {
	c := in.Client
	names := slices.Clone(infoLabels)
	vals := append(clientValues(in), c.SourceAddress, strconv.Itoa(c.SourcePort), c.Principal, c.Listener)
	taken := make(map[string]bool, len(names)+len(in.Resource))
	for _, n := range names {
		taken[n] = true
	}
	for _, a := range in.Resource {
		n := labelName(a.Key)
		if taken[n] {
			n = "resource_" + n
		}
		if taken[n] {
			continue
		}
		taken[n] = true
		names = append(names, n)
		vals = append(vals, a.Value)
	}
	for i := range vals {
		vals[i] = validLabelValue(vals[i])
	}
	desc := prometheus.NewDesc(ClientsPrefix+"_info",
		"One series per client instance pushing KIP-714 metrics, value 1: its connection and its resource attributes as labels.", names, nil)
	if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, vals...); err == nil {
		ch <- m
	}
}

// family is one family of client series as a scrape shows it.
type family struct {
	name, help string
	typ        prometheus.ValueType // promType's; histograms and summaries below
	dropped    bool                 // collides with a histogram's or summary's names
	seen       map[string]struct{}  // label sets sent, to leave duplicates out
}

// Value types beyond the three prometheus.ValueType has, for family.typ.
const (
	histogramType prometheus.ValueType = 100 + iota
	summaryType
)

func promType(k clientmetrics.Kind) prometheus.ValueType {
	switch k {
	case clientmetrics.Counter:
		return prometheus.CounterValue
	case clientmetrics.Histogram:
		return histogramType
	case clientmetrics.Summary:
		return summaryType
	}
	return prometheus.GaugeValue // gauges and up-down counters
}

// planFamilies decides each family's type and help from the first series
// that names it (instances in ID order, series in name order), and drops
// the families whose names a histogram's or summary's family writes, as
// the registry refuses such a pair.
func planFamilies(instances []clientmetrics.Instance) map[string]*family {
	fams := make(map[string]*family)
	for i := range instances {
		for j := range instances[i].Series {
			s := &instances[i].Series[j]
			name := familyName(s)
			if fams[name] != nil {
				continue
			}
			help := "Client metric " + s.Name + " (KIP-714)"
			if s.Description != "" {
				help += ": " + s.Description
			}
			if s.Unit != "" {
				help += " [" + s.Unit + "]"
			}
			fams[name] = &family{name: name, help: validLabelValue(help), typ: promType(s.Kind), seen: make(map[string]struct{})}
		}
	}
	for _, f := range fams {
		if f.typ != histogramType && f.typ != summaryType {
			continue
		}
		suffixes := []string{"_count", "_sum"}
		if f.typ == histogramType {
			suffixes = append(suffixes, "_bucket")
		}
		for _, sfx := range suffixes {
			if g := fams[f.name+sfx]; g != nil {
				g.dropped = true
			}
		}
	}
	return fams
}

// familyName is the Prometheus family of s: ClientPrefix and its sanitized
// OTLP name, a counter's ending in _total.
func familyName(s *clientmetrics.Series) string {
	base := strings.TrimLeft(sanitize(s.Name, true), "_") // the prefix ends in one
	if base == "" {
		base = "unnamed"
	}
	name := ClientPrefix + base
	if s.Kind == clientmetrics.Counter && !strings.HasSuffix(name, "_total") {
		name += "_total"
	}
	return name
}

// clientValues are in's values of clientLabels.
func clientValues(in *clientmetrics.Instance) []string {
	c := in.Client
	return []string{clientmetrics.FormatInstanceID(c.InstanceID), validLabelValue(c.ClientID),
		validLabelValue(c.SoftwareName), validLabelValue(c.SoftwareVersion)}
}

// seriesLabels are the label names and values of s: the client's, then
// its attributes'.
func seriesLabels(s *clientmetrics.Series, client []string) (names, vals []string) {
	names = make([]string, 0, len(clientLabels)+len(s.Attrs))
	vals = make([]string, 0, cap(names))
	names = append(names, clientLabels...)
	vals = append(vals, client...)
	for _, a := range s.Attrs {
		n := labelName(a.Key)
		if slices.Contains(names, n) || n == "le" || n == "quantile" {
			n = "attr_" + n
		}
		if slices.Contains(names, n) {
			continue // two keys that sanitize alike: the first is kept
		}
		names = append(names, n)
		vals = append(vals, validLabelValue(a.Value))
	}
	return names, vals
}

// constMetric is s as a const metric of desc.
func constMetric(desc *prometheus.Desc, s *clientmetrics.Series, vals []string) (prometheus.Metric, error) {
	switch s.Kind {
	case clientmetrics.Counter:
		return prometheus.NewConstMetric(desc, prometheus.CounterValue, s.Value, vals...)
	case clientmetrics.Histogram:
		buckets := make(map[float64]uint64, len(s.Bounds))
		var cum uint64
		for i, b := range s.Bounds {
			cum += s.Buckets[i]
			buckets[b] = cum
		}
		return prometheus.NewConstHistogram(desc, s.Count, s.Sum, buckets, vals...)
	case clientmetrics.Summary:
		qs := make(map[float64]float64, len(s.Quantiles))
		for _, q := range s.Quantiles {
			qs[q.Quantile] = q.Value
		}
		return prometheus.NewConstSummary(desc, s.Count, s.Sum, qs, vals...)
	}
	return prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.Value, vals...)
}

// labelName is an attribute key as a label name: sanitized, and a leading
// digit prefixed "key_" (the OpenTelemetry Prometheus compatibility rules).
func labelName(key string) string {
	n := sanitize(key, false)
	if n == "" {
		return "key"
	}
	if n[0] >= '0' && n[0] <= '9' {
		return "key_" + n
	}
	return n
}

// sanitize turns every character a Prometheus name may not hold into "_"
// (":" allowed in metric names only) and makes runs of "_" one.
func sanitize(s string, metric bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || metric && r == ':'
		if !ok {
			r = '_'
		}
		if r == '_' && strings.HasSuffix(b.String(), "_") {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// validLabelValue keeps a label value valid UTF-8, which the registry
// requires: a client ID is whatever bytes the client sent.
func validLabelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
