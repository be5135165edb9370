package wire

import "testing"

// TestSpareResponseBuffer: the one spare large buffer goes to one taker at
// a time, emptied; the last one returned is the spare; one over
// MaxSpareResponseBuffer is not kept.
func TestSpareResponseBuffer(t *testing.T) {
	spareResponseBuffer.Store(nil)
	t.Cleanup(func() { spareResponseBuffer.Store(nil) })
	if b := TakeResponseBuffer(); b != nil {
		t.Fatalf("no buffer returned yet, took one of cap %d", cap(b))
	}
	first := make([]byte, 100, 2<<20)
	second := make([]byte, 200, 3<<20)
	ReturnResponseBuffer(first)
	ReturnResponseBuffer(second)
	b := TakeResponseBuffer()
	if len(b) != 0 || cap(b) != cap(second) || &b[:1][0] != &second[0] {
		t.Fatalf("took len %d cap %d, want the last returned (cap %d) emptied", len(b), cap(b), cap(second))
	}
	if b := TakeResponseBuffer(); b != nil {
		t.Fatalf("the spare was taken, yet a second taker got one of cap %d", cap(b))
	}
	ReturnResponseBuffer(make([]byte, 0, MaxSpareResponseBuffer+1))
	if b := TakeResponseBuffer(); b != nil {
		t.Fatalf("a buffer over MaxSpareResponseBuffer was kept (cap %d)", cap(b))
	}
}
