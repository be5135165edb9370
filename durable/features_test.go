package durable

import (
	"reflect"
	"testing"
)

// features-kept: the finalized levels replay, the later record wins, and
// they survive compaction; a directory that never recorded any has none.
func TestFeaturesReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	if _, ok := d.Features(); ok {
		t.Fatal("a new directory has features")
	}
	first := FeatureLevels{Levels: map[string]int16{"metadata.version": 27, "share.version": 1}, Epoch: 2}
	last := FeatureLevels{Levels: map[string]int16{"metadata.version": 27}, Epoch: 3}
	for _, f := range []FeatureLevels{first, last} {
		if err := d.SetFeatures(f); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	for range 2 { // the second start reads the compacted log
		d2, _, _ := open(t, dir, Options{})
		if got, ok := d2.Features(); !ok || !reflect.DeepEqual(got, last) {
			t.Fatalf("replayed %v (%v), want %v", got, ok, last)
		}
		d2.Close()
	}
}
