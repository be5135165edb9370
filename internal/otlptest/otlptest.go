// Package otlptest builds the OTLP metrics payloads KIP-714 clients push,
// with the OpenTelemetry protobuf module's own types, for the tests of the
// packages that read them (clientmetrics, metrics, httpapi, broker).
package otlptest

import (
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// Payload is the serialized metrics of one push: one resource with attrs
// (key, value, key, value...) and one scope holding metrics. It is what an
// ExportMetricsServiceRequest carries, field for field.
func Payload(t testing.TB, resource []string, metrics ...*metricspb.Metric) []byte {
	t.Helper()
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:     &resourcepb.Resource{Attributes: Attrs(resource...)},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "otlptest"}, Metrics: metrics}},
	}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatalf("marshal OTLP payload: %v", err)
	}
	return b
}

// Attrs is string attributes from key, value pairs.
func Attrs(kv ...string) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &commonpb.KeyValue{Key: kv[i], Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: kv[i+1]}}})
	}
	return out
}

// Gauge is a gauge of one double data point with attributes attrs.
func Gauge(name string, v float64, attrs ...string) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: Attrs(attrs...), TimeUnixNano: 1, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}},
	}}}
}

// Sum is a sum of one integer data point, monotonic or not, delta or
// cumulative.
func Sum(name string, v int64, monotonic, delta bool, attrs ...string) *metricspb.Metric {
	temp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if delta {
		temp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: monotonic, AggregationTemporality: temp,
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: Attrs(attrs...), TimeUnixNano: 1, Value: &metricspb.NumberDataPoint_AsInt{AsInt: v}}},
	}}}
}

// Histogram is an explicit-bucket histogram of one data point: bounds,
// per-bucket counts (len(bounds)+1), their sum as the count, and sum.
func Histogram(name string, delta bool, bounds []float64, counts []uint64, sum float64, attrs ...string) *metricspb.Metric {
	temp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if delta {
		temp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	var n uint64
	for _, c := range counts {
		n += c
	}
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		AggregationTemporality: temp,
		DataPoints: []*metricspb.HistogramDataPoint{{Attributes: Attrs(attrs...), Count: n, Sum: &sum,
			ExplicitBounds: bounds, BucketCounts: counts}},
	}}}
}
