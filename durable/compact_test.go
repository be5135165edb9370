package durable

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// meta-compaction: the metadata log is rewritten in the background once
// enough records were appended; what a restart reads is unchanged, and the
// file holds a snapshot rather than every change.
func TestCompactInBackground(t *testing.T) {
	dir := t.TempDir()
	done := make(chan struct{}, 100)
	d, _, _ := open(t, dir, Options{CompactEvery: 10})
	d.testCompactHook = func(stage string) {
		if stage == "renamed" {
			done <- struct{}{}
		}
	}
	k := SCRAMKey{User: "alice", Mechanism: 1}
	var last SCRAMCredential
	for i := range 100 {
		last = SCRAMCredential{Salt: []byte{byte(i)}, StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}
		if err := d.SetSCRAM(k, last); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no background compaction within 10 s of 100 records with CompactEvery 10")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := countMetaRecords(b); n >= 100 {
		t.Fatalf("meta.log holds %d records after compaction, want fewer than the 100 appended", n)
	}
	d2, _, _ := open(t, dir, Options{})
	if got := d2.SCRAMCredentials()[k]; got == nil || !reflect.DeepEqual(*got, last) {
		t.Fatalf("after compaction and a restart alice's credential is %+v, want %+v", got, last)
	}
}

// meta-compaction: records appended while a compaction runs are kept, and
// a crash at any step of it — the directory as it is then, copied and
// opened — recovers every record appended so far.
func TestCompactCrashBetweenSteps(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{CompactEvery: -1}) // compactMeta is called by hand
	acl := func(i int) ACL {
		return ACL{ResourceType: 2, ResourceName: string(rune('a' + i)), PatternType: 3, Principal: "User:u", Host: "*", Operation: 3, Permission: 3}
	}
	var want []ACL
	add := func(i int) {
		t.Helper()
		if err := d.AddACLs([]ACL{acl(i)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, acl(i))
	}
	for i := range 5 {
		add(i)
	}
	if err := d.DeleteACLs([]ACL{acl(0)}); err != nil {
		t.Fatal(err)
	}
	want = want[1:]

	crashes := map[string]string{}
	d.testCompactHook = func(stage string) {
		if stage == "snapshot-written" {
			// Appends go on while the snapshot is made, without the lock.
			add(5)
			add(6)
		}
		crash := filepath.Join(t.TempDir(), stage)
		copyDir(t, dir, crash)
		crashes[stage] = crash
		if stage == "snapshot-written" {
			add(7) // after the copy: not in this crash
		}
	}
	if _, _, err := d.compactMeta(); err != nil {
		t.Fatal(err)
	}
	add(8) // appended to the new file
	wantAt := map[string][]ACL{
		"snapshot-written": want[:6], // 1-4, 5, 6
		"before-rename":    want[:7],
		"renamed":          want[:7],
	}
	for stage, crash := range crashes {
		c, _, _ := open(t, crash, Options{})
		if got := c.ACLs(); !reflect.DeepEqual(got, wantAt[stage]) {
			t.Errorf("crash at %s recovers %v, want %v", stage, got, wantAt[stage])
		}
		c.Close()
	}
	if len(crashes) != 3 {
		t.Fatalf("compaction passed stages %v, want 3", crashes)
	}
	d.Close()
	d2, _, _ := open(t, dir, Options{})
	if got := d2.ACLs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction and a restart: %v, want %v", got, want)
	}
}

// copyDir copies the regular files of src (not the lock's hold) to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
