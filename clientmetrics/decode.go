package clientmetrics

import (
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// decoded is one payload's data points in the store's terms.
type decoded struct {
	list    []point
	dropped int // points whose metric name is empty or too long
}

// point is a data point of a payload and whether its value is a delta.
type point struct {
	Series
	delta bool
}

func (p *point) key() string { return seriesKey(p.Name, p.Attrs) }

// decode reads payload, an OTLP ExportMetricsServiceRequest (KIP-714's
// payload: "the OpenTelemetry metrics protobuf, serialized"). It is decoded
// as MetricsData, whose only field (1, repeated ResourceMetrics) is the
// request's: the same bytes on the wire, as the OTLP spec keeps them, and
// the collector package's request type would bring gRPC with it. The
// resource attributes returned are the last resource's that had any (a
// client pushes one resource), nil when none had.
func decode(payload []byte) (decoded, []Attr, error) {
	var out decoded
	if len(payload) == 0 {
		return out, nil, nil
	}
	var md metricspb.MetricsData
	if err := proto.Unmarshal(payload, &md); err != nil {
		return out, nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	n := 0
	for _, rm := range md.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				n += countPoints(m)
			}
		}
	}
	out.list = make([]point, 0, n)
	var resource []Attr
	for _, rm := range md.GetResourceMetrics() {
		if attrs := rm.GetResource().GetAttributes(); len(attrs) > 0 {
			resource = attrList(attrs)
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				out.add(m)
			}
		}
	}
	return out, resource, nil
}

// add appends the data points of m.
func (d *decoded) add(m *metricspb.Metric) {
	name := m.GetName()
	if name == "" || len(name) > MaxNameLen {
		d.dropped += countPoints(m)
		return
	}
	base := Series{Name: name, Description: truncate(m.GetDescription()), Unit: truncate(m.GetUnit())}
	switch data := m.GetData().(type) {
	case *metricspb.Metric_Gauge:
		for _, dp := range data.Gauge.GetDataPoints() {
			d.number(base, Gauge, false, dp)
		}
	case *metricspb.Metric_Sum:
		kind := UpDownCounter
		if data.Sum.GetIsMonotonic() {
			kind = Counter
		}
		delta := data.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range data.Sum.GetDataPoints() {
			d.number(base, kind, delta, dp)
		}
	case *metricspb.Metric_Histogram:
		delta := data.Histogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range data.Histogram.GetDataPoints() {
			s := base
			s.Kind, s.Attrs, s.Time = Histogram, attrList(dp.GetAttributes()), unixNano(dp.GetTimeUnixNano())
			s.Count, s.Sum = dp.GetCount(), dp.GetSum()
			// Buckets only when they are well formed: one count more than
			// bounds, bounds increasing (the OTLP rule); else count and sum.
			if b := dp.GetExplicitBounds(); len(dp.GetBucketCounts()) == len(b)+1 && slices.IsSorted(b) && !slices.ContainsFunc(b, math.IsNaN) {
				s.Bounds, s.Buckets = slices.Clone(b), slices.Clone(dp.GetBucketCounts())
			}
			d.list = append(d.list, point{Series: s, delta: delta})
		}
	case *metricspb.Metric_ExponentialHistogram:
		delta := data.ExponentialHistogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range data.ExponentialHistogram.GetDataPoints() {
			s := base
			s.Kind, s.Attrs, s.Time = Histogram, attrList(dp.GetAttributes()), unixNano(dp.GetTimeUnixNano())
			s.Count, s.Sum = dp.GetCount(), dp.GetSum()
			d.list = append(d.list, point{Series: s, delta: delta})
		}
	case *metricspb.Metric_Summary:
		for _, dp := range data.Summary.GetDataPoints() {
			s := base
			s.Kind, s.Attrs, s.Time = Summary, attrList(dp.GetAttributes()), unixNano(dp.GetTimeUnixNano())
			s.Count, s.Sum = dp.GetCount(), dp.GetSum()
			for _, q := range dp.GetQuantileValues() {
				s.Quantiles = append(s.Quantiles, Quantile{Quantile: q.GetQuantile(), Value: q.GetValue()})
			}
			// Summaries are cumulative in OTLP: no temporality field.
			d.list = append(d.list, point{Series: s})
		}
	}
	// A metric with no data (none of the above) has no points to keep.
}

// number appends a gauge's or sum's data point.
func (d *decoded) number(base Series, kind Kind, delta bool, dp *metricspb.NumberDataPoint) {
	s := base
	s.Kind, s.Attrs, s.Time = kind, attrList(dp.GetAttributes()), unixNano(dp.GetTimeUnixNano())
	switch v := dp.GetValue().(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		s.Value = v.AsDouble
	case *metricspb.NumberDataPoint_AsInt:
		s.Value = float64(v.AsInt)
	}
	d.list = append(d.list, point{Series: s, delta: delta})
}

// countPoints is the number of data points m carries.
func countPoints(m *metricspb.Metric) int {
	return len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) +
		len(m.GetHistogram().GetDataPoints()) + len(m.GetExponentialHistogram().GetDataPoints()) +
		len(m.GetSummary().GetDataPoints())
}

func unixNano(ns uint64) time.Time {
	if ns == 0 || ns > math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns)).UTC()
}

// attrList is kvs as sorted attributes: empty and over-long keys dropped,
// a repeated key's first value kept, at most MaxAttributes, values written
// as text and cut at MaxValueLen.
func attrList(kvs []*commonpb.KeyValue) []Attr {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]Attr, 0, min(len(kvs), MaxAttributes))
	for _, kv := range kvs {
		k := kv.GetKey()
		if k == "" || len(k) > MaxNameLen {
			continue
		}
		out = append(out, Attr{Key: k, Value: truncate(anyValue(kv.GetValue()))})
	}
	slices.SortStableFunc(out, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
	out = slices.CompactFunc(out, func(a, b Attr) bool { return a.Key == b.Key })
	if len(out) > MaxAttributes {
		out = out[:MaxAttributes]
	}
	return out
}

// anyValue writes an attribute value as text: strings as they are,
// numbers and booleans as Go formats them, bytes in base64, lists and maps
// as [a,b] and {k=v}. It stops once the text passes MaxValueLen, so a deep
// or long value costs no more than the cut text.
func anyValue(v *commonpb.AnyValue) string {
	var b strings.Builder
	writeAny(&b, v)
	s := b.String()
	if !utf8.ValidString(s) { // bytes of a cut string value: keep labels valid
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

func writeAny(b *strings.Builder, v *commonpb.AnyValue) {
	if b.Len() > MaxValueLen {
		return
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		b.WriteString(x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		b.WriteString(strconv.FormatBool(x.BoolValue))
	case *commonpb.AnyValue_IntValue:
		b.WriteString(strconv.FormatInt(x.IntValue, 10))
	case *commonpb.AnyValue_DoubleValue:
		b.WriteString(strconv.FormatFloat(x.DoubleValue, 'g', -1, 64))
	case *commonpb.AnyValue_BytesValue:
		b.WriteString(base64.StdEncoding.EncodeToString(x.BytesValue))
	case *commonpb.AnyValue_ArrayValue:
		b.WriteByte('[')
		for i, e := range x.ArrayValue.GetValues() {
			if b.Len() > MaxValueLen {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeAny(b, e)
		}
		b.WriteByte(']')
	case *commonpb.AnyValue_KvlistValue:
		b.WriteByte('{')
		for i, kv := range x.KvlistValue.GetValues() {
			if b.Len() > MaxValueLen {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(kv.GetKey())
			b.WriteByte('=')
			writeAny(b, kv.GetValue())
		}
		b.WriteByte('}')
	}
}
