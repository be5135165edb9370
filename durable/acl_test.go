package durable

import (
	"reflect"
	"testing"
)

// acls-kept: creations and deletions replay in order, an ACL is held
// once, creation order is kept, and all of it survives compaction.
func TestACLReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	read := ACL{ResourceType: 2, ResourceName: "orders", PatternType: 3, Principal: "User:alice", Host: "*", Operation: 3, Permission: 3}
	write := read
	write.Operation = 4
	deny := ACL{ResourceType: 3, ResourceName: "g-", PatternType: 4, Principal: "User:bob", Host: "10.0.0.1", Operation: 3, Permission: 2}
	for _, err := range []error{
		d.AddACLs([]ACL{read, write}),
		d.AddACLs([]ACL{deny}),
		d.DeleteACLs([]ACL{read}),
		d.AddACLs([]ACL{read, deny}), // deny is held already: it keeps its place
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	want := []ACL{write, deny, read}
	for range 2 { // the second start reads the compacted log
		d2, _, _ := open(t, dir, Options{})
		if got := d2.ACLs(); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %v, want %v", got, want)
		}
		d2.Close()
	}
}

// A snapshot of many ACLs splits them over records, each well under the
// record bound, and reads back whole.
func TestACLSnapshotChunks(t *testing.T) {
	acls := make([]ACL, 2*aclsPerRecord+1)
	for i := range acls {
		acls[i] = ACL{ResourceType: 2, ResourceName: string(rune('a' + i%26)), PatternType: 3,
			Principal: "User:u", Host: "*", Operation: int8(2 + i%14), Permission: 3}
		acls[i].ResourceName += string(rune(i))
	}
	recs, _, err := readMetaLog(appendACLs(nil, acls))
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, err %v; want 3", len(recs), err)
	}
	var got []ACL
	for _, r := range recs {
		got = replayACLs(got, r)
	}
	if !reflect.DeepEqual(got, acls) {
		t.Fatal("the ACLs read back differ")
	}
}
