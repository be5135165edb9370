package durable

import (
	"reflect"
	"testing"
)

// client-metrics-kept: subscriptions replay, a later record replaces an
// earlier one, an empty one deletes, and they survive compaction.
func TestClientMetricsReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	for _, err := range []error{
		d.SetClientMetrics("a", map[string]string{"metrics": "x."}),
		d.SetClientMetrics("a", map[string]string{"metrics": "y.", "interval.ms": "1000"}),
		d.SetClientMetrics("b", map[string]string{"metrics": "*"}),
		d.SetClientMetrics("b", nil),
		d.SetClientMetrics("never", nil),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	want := map[string]map[string]string{"a": {"metrics": "y.", "interval.ms": "1000"}}
	for range 2 { // the second start reads the compacted log
		d2, _, _ := open(t, dir, Options{})
		if got := d2.ClientMetrics(); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %v, want %v", got, want)
		}
		d2.Close()
	}
}
