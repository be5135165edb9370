package durable

import (
	"fmt"
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

// meta-compaction: records appended while a compaction runs are kept, a
// crash at any step of it — the directory as it is then, copied and
// opened — recovers every record appended so far, and a later run
// carries on from the state the first one replayed.
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
	// A second run reads only what follows the first one's snapshot.
	d.testCompactHook = nil
	if err := d.DeleteACLs([]ACL{acl(2)}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:1], want[2:]...)
	if _, _, err := d.compactMeta(); err != nil {
		t.Fatal(err)
	}
	add(9)
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

// BenchmarkShareUpdates appends one share-update record per operation, as
// a share acknowledgement does, to 16 share partitions, and reports the
// metadata log's size at the end: without background compaction it grows
// with every record, with it (the default) it stays near the live state.
func BenchmarkShareUpdates(b *testing.B) {
	for _, every := range []int{-1, DefaultCompactEvery} {
		b.Run(fmt.Sprintf("compact-every=%d", every), func(b *testing.B) {
			dir := b.TempDir()
			d, store, _, err := tryOpen(dir, Options{CompactEvery: every})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			tp, err := store.CreateTopic("t", 16, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				k := ShareKey{Group: "g", TopicID: tp.ID, Partition: int32(i % 16)}
				off := int64(i / 16)
				err := d.WriteShareState(k, i < 16, ShareState{StartOffset: off, StateEpoch: 1,
					Batches: []ShareBatch{{First: off, Last: off, State: 2, Count: 1}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fi, err := os.Stat(filepath.Join(dir, metaFile))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "meta-bytes")
		})
	}
}
