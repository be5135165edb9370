package group

import (
	"errors"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if err := r.Claim("s", TypeShare); err != nil {
		t.Fatal(err)
	}
	if err := r.Claim("s", TypeShare); err != nil {
		t.Fatalf("re-claim by the same type: %v", err)
	}
	if err := r.Claim("c", TypeConsumer); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		want Type
		err  error
	}{
		{"free id", "free", TypeClassic, nil},
		{"same type", "s", TypeShare, nil},
		{"consumer on share id", "s", TypeConsumer, ErrGroupIDNotFound},
		{"streams on share id", "s", TypeStreams, ErrGroupIDNotFound},
		{"classic join on share id", "s", TypeClassic, ErrInconsistentGroupProtocol},
		{"share on consumer id", "c", TypeShare, ErrGroupIDNotFound},
		{"classic on consumer id", "c", TypeClassic, ErrGroupIDNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Check(tc.id, tc.want)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
		})
	}
	if typ, ok := r.TypeOf("s"); !ok || typ != TypeShare || typ.String() != "share" {
		t.Fatalf("TypeOf: %v %v", typ, ok)
	}
	r.Release("s", TypeConsumer) // wrong type: no effect
	if _, ok := r.TypeOf("s"); !ok {
		t.Fatal("released by the wrong type")
	}
	r.Release("s", TypeShare)
	if err := r.Claim("s", TypeConsumer); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
}
