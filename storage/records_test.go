package storage

import (
	"reflect"
	"testing"
)

// A built batch appends like a produced one and reads back record by
// record: nulls stay null, headers keep their order, timestamps are each
// record's own.
func TestBuildBatchRoundTrip(t *testing.T) {
	p := newPartition("t", 0)
	in := []Record{
		{Timestamp: 1000, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{"a", []byte("1")}, {"b", nil}}},
		{Timestamp: 1005, Value: []byte{}},
		{Timestamp: 999},
	}
	if _, err := p.Append(BuildBatch(in[:1]), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(BuildBatch(in[1:]), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := p.RecordsIn(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i].Offset = int64(i)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("got %+v\nwant %+v", got, in)
	}
	if got, _ := p.RecordsIn(1, 1); len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("one offset: %+v", got)
	}
}
