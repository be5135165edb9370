package clientmetrics

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what a series measures, from the OTLP metric's data type.
type Kind uint8

// The kinds of series. A sum is a Counter when monotonic, an UpDownCounter
// otherwise; an exponential histogram is kept as a Histogram of its count
// and sum only.
const (
	Gauge Kind = iota + 1
	Counter
	UpDownCounter
	Histogram
	Summary
)

// String is the kind's name as the JSON API shows it.
func (k Kind) String() string {
	switch k {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	case UpDownCounter:
		return "updowncounter"
	case Histogram:
		return "histogram"
	case Summary:
		return "summary"
	}
	return "unknown"
}

// Attr is one attribute of a data point or resource, its value written as
// text (attribute values are strings, numbers, booleans, bytes, or lists
// and maps of them in OTLP).
type Attr struct{ Key, Value string }

// Quantile is one quantile of a Summary.
type Quantile struct{ Quantile, Value float64 }

// Series is the latest value of one data point series: a metric name and
// the data point's attributes.
type Series struct {
	// Name, Description and Unit are the OTLP metric's.
	Name, Description, Unit string
	Kind                    Kind
	// Attrs are the data point's attributes, sorted by key, at most
	// MaxAttributes.
	Attrs []Attr
	// Value is a Gauge's or an UpDownCounter's latest value, or a Counter's
	// cumulative value: a cumulative sum as pushed, delta sums added up
	// since the series was first kept (client-metrics-delta).
	Value float64
	// Count and Sum are a Histogram's or a Summary's, cumulative as Value
	// is.
	Count uint64
	Sum   float64
	// Bounds are a Histogram's explicit bucket bounds and Buckets its count
	// per bucket (len(Bounds)+1, the last counting what lies above the last
	// bound); nil Buckets for count and sum only.
	Bounds  []float64
	Buckets []uint64
	// Quantiles are a Summary's.
	Quantiles []Quantile
	// Time is the data point's own time, on the client's clock; zero when
	// it gave none.
	Time time.Time
	// Updated is the broker clock at the push that last changed it.
	Updated time.Time
}

func (s *Series) clone() Series {
	c := *s
	c.Attrs = slices.Clone(s.Attrs)
	c.Bounds = slices.Clone(s.Bounds)
	c.Buckets = slices.Clone(s.Buckets)
	c.Quantiles = slices.Clone(s.Quantiles)
	return c
}

// merge takes p, a new data point of the series s holds, at now: a delta
// point adds to what s holds (client-metrics-delta), any other replaces it.
// A point whose kind differs from s's replaces it whatever its temporality:
// the client changed the metric's type, and the two cannot be added.
func (s *Series) merge(p *Series, delta bool, now time.Time) {
	if !delta || p.Kind != s.Kind {
		updated := *p
		updated.Updated = now
		*s = updated
		return
	}
	s.Value += p.Value
	s.Count += p.Count
	s.Sum += p.Sum
	if slices.Equal(s.Bounds, p.Bounds) && len(s.Buckets) == len(p.Buckets) {
		for i, n := range p.Buckets {
			s.Buckets[i] += n
		}
	} else {
		// New bounds: the old buckets cannot be carried over. Count and
		// Sum go on adding up; the buckets restart from this point.
		s.Bounds, s.Buckets = p.Bounds, p.Buckets
	}
	s.Description, s.Unit, s.Time, s.Updated = p.Description, p.Unit, p.Time, now
}

// compareAttrs orders attribute lists, for sorted output.
func compareAttrs(a, b []Attr) int {
	return slices.CompareFunc(a, b, func(x, y Attr) int {
		return cmp.Or(strings.Compare(x.Key, y.Key), strings.Compare(x.Value, y.Value))
	})
}

// seriesKey identifies a series within its instance: the metric name and
// the attributes, each length-prefixed so that no two lists share a key.
func seriesKey(name string, attrs []Attr) string {
	var b strings.Builder
	writeLP := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	writeLP(name)
	for _, a := range attrs {
		writeLP(a.Key)
		writeLP(a.Value)
	}
	return b.String()
}

// truncate cuts v to MaxValueLen bytes at a UTF-8 boundary, marking the cut.
func truncate(v string) string {
	if len(v) <= MaxValueLen {
		return v
	}
	const mark = "…"
	cut := MaxValueLen - len(mark)
	for cut > 0 && !isRuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + mark
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
