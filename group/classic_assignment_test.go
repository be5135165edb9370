package group

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// consumerAssignment encodes a consumer protocol assignment (version v)
// as a classic group's leader sends it, user data included.
func consumerAssignment(v int16, topics []AssignedTopic, userData []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(v))
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t.Topic)))
		b = append(b, t.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(t.Partitions)))
		for _, p := range t.Partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(userData)))
	return append(b, userData...)
}

func TestClassicConsumerAssignment(t *testing.T) {
	want := []AssignedTopic{{Topic: "a", Partitions: []int32{0, 2}}, {Topic: "bb", Partitions: []int32{}}}
	for _, v := range []int16{0, 1, 3} {
		got, ok := ClassicConsumerAssignment(consumerAssignment(v, want, []byte("user")))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("version %d: %+v %v", v, got, ok)
		}
	}
	if got, ok := ClassicConsumerAssignment(consumerAssignment(0, nil, nil)); !ok || len(got) != 0 {
		t.Errorf("empty assignment: %+v %v", got, ok)
	}
	full := consumerAssignment(0, want, nil)
	bad := [][]byte{nil, {0}, {0xff, 0xff, 0, 0, 0, 0}, {0, 0, 0x7f, 0xff, 0xff, 0xff}}
	for n := range len(full) - 4 { // every truncation before the user data
		bad = append(bad, full[:n])
	}
	for _, b := range bad {
		if got, ok := ClassicConsumerAssignment(b); ok {
			t.Errorf("%x read as %+v", b, got)
		}
	}
}

// Whatever the bytes, reading an assignment neither panics nor allocates
// more than the bytes can hold.
func FuzzClassicConsumerAssignment(f *testing.F) {
	f.Add(consumerAssignment(0, []AssignedTopic{{Topic: "t", Partitions: []int32{1}}}, nil))
	f.Fuzz(func(t *testing.T, b []byte) { ClassicConsumerAssignment(b) })
}
