package durable

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// scram-kept: credentials and deletions replay, later wins, and survive
// compaction; the file holds no password.
func TestSCRAMReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	alice := SCRAMKey{User: "alice", Mechanism: 1}
	bob := SCRAMKey{User: "bob", Mechanism: 2}
	old := SCRAMCredential{Salt: []byte("s1"), StoredKey: []byte("k1"), ServerKey: []byte("v1"), Iterations: 4096}
	cur := SCRAMCredential{Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192}
	for _, err := range []error{d.SetSCRAM(alice, old), d.SetSCRAM(alice, cur), d.SetSCRAM(bob, old), d.DeleteSCRAM(bob)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	want := map[SCRAMKey]*SCRAMCredential{alice: &cur, bob: nil}
	for range 2 { // the second start reads the compacted log
		d2, _, _ := open(t, dir, Options{})
		if got := d2.SCRAMCredentials(); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %v, want %v", got, want)
		}
		d2.Close()
	}
	b, _ := os.ReadFile(filepath.Join(dir, metaFile))
	if bytes.Contains(b, []byte("password")) {
		t.Fatal("the metadata log names a password")
	}
}
