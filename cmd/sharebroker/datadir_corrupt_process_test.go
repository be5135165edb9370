package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// These tests damage a data directory a real broker wrote — kgo produced
// 15 records, a kgo share consumer accepted them, an ACL and a SCRAM user
// were created — the way issue 21 did, and start sharebroker on it
// (docs/durability.md no-silent-loss, set-aside-not-deleted,
// repair-data-dir, no-symlinks).

// realDataDir returns a data directory written by a broker run and
// stopped with SIGTERM. With SHAREBROKER_WRITE_RECOVERY_SEEDS=1 it is also
// copied to durable/testdata/datadir, the real directory the recovery
// fuzz targets damage.
func realDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeRealDataDir(t, dir)
	if os.Getenv("SHAREBROKER_WRITE_RECOVERY_SEEDS") == "1" {
		seeds := filepath.Join("..", "..", "durable", "testdata", "datadir")
		if err := os.RemoveAll(seeds); err != nil {
			t.Fatal(err)
		}
		copyDataDir(t, dir, seeds)
	}
	return dir
}

const realTopic = "events"

func writeRealDataDir(t *testing.T, dir string) {
	t.Helper()
	p := startDataDir(t, dir, "--config", "authorizer.class.name="+standardAuthorizer, "--config", "super.users=User:ANONYMOUS")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	values := shareValues(0, 15)
	produceValues(t, ctx, p.addr, realTopic, values...)
	setShareGroupConfig(t, rawconn.Dial(t, p.addr), "workers", "share.auto.offset.reset", "earliest")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumeTopics(realTopic), kgo.ShareGroup("workers"),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for accepted < len(values) {
		recs := cl.PollFetches(ctx).Records()
		if ctx.Err() != nil {
			t.Fatalf("the share consumer accepted %d of %d records before the deadline", accepted, len(values))
		}
		for _, r := range recs {
			r.Ack(kgo.AckAccept)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		accepted += len(recs)
	}
	cl.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(realTopic).Operations(kadm.OpRead))
	if err != nil || created[0].Err != nil {
		t.Fatalf("creating an ACL: %v %+v", err, created)
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("creating a SCRAM user: %v %v", err, altered.Error())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// copyDataDir copies the files of a stopped broker's data directory.
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if e.Name() == "lock" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dirFiles maps each file under dir (the lock aside) to its bytes.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == "lock" {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			files[rel] = "-> " + target
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// startRefused starts sharebroker on dir, wants exit status 1 with every
// string of want in its stderr, and no file of dir changed.
func startRefused(t *testing.T, dir string, want ...string) string {
	t.Helper()
	before := dirFiles(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "serve", "--listen", "127.0.0.1:0", "--http", "", "--data-dir", dir)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A broker that starts listening did not refuse: stop it at once.
	var stderr strings.Builder
	started := false
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if kafkaListening.MatchString(sc.Text()) {
			started = true
			_ = cmd.Process.Kill()
		}
	}
	err = cmd.Wait()
	if exit, ok := err.(*exec.ExitError); started || !ok || exit.ExitCode() != 1 {
		t.Errorf("start on the damaged %s: %v (listening: %v), want exit status 1; stderr:\n%s", dir, err, started, stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("the refusal does not say %q:\n%s", w, stderr.String())
		}
	}
	after := dirFiles(t, dir)
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("a refused start deleted %s", name)
		} else if a != b {
			t.Errorf("a refused start changed %s: %d bytes, was %d", name, len(a), len(b))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("a refused start made %s", name)
		}
	}
	t.Logf("refused: %s", stderr.String())
	if t.Failed() {
		t.FailNow()
	}
	return stderr.String()
}

// repairDir runs `sharebroker repair-data-dir dir` and returns what it
// printed, wanting every string of want in it.
func repairDir(t *testing.T, dir string, want ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "repair-data-dir", dir)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("repair-data-dir %s: %v\n%s", dir, err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the repair report does not say %q:\n%s", w, out)
		}
	}
	t.Logf("repair-data-dir:\n%s", out)
	return string(out)
}

// metaRecordsAt lists the byte position and op of each record of a
// meta.log.
func metaRecordsAt(t *testing.T, meta string) (pos []int64, ops []string) {
	t.Helper()
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	for at := 0; at+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[at:]))
		var rec struct{ Op string }
		if err := json.Unmarshal(b[at+8:at+8+n], &rec); err != nil {
			t.Fatalf("%s at %d: %v", meta, at, err)
		}
		pos, ops = append(pos, int64(at)), append(ops, rec.Op)
		at += 8 + n
	}
	return pos, ops
}

func overwrite(t *testing.T, name string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func theSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "logs", "*", "0", "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	return segs[0]
}

// no-silent-loss, repair-data-dir: the first batch's length overwritten
// with 0x7ffffff0 (issue 21: all 15 records gone at restart with one
// WARN line) refuses the start, naming the segment and byte 0; the
// repair tool cuts it there, keeps the bytes and reports the 14 whole
// batches they still held; then the broker starts.
func TestDataDirImpossibleBatchLengthRefused(t *testing.T) {
	dir := t.TempDir()
	copyDataDir(t, realDataDir(t), dir)
	seg := theSegment(t, dir)
	overwrite(t, seg, 8, []byte{0x7f, 0xff, 0xff, 0xf0})
	startRefused(t, dir, seg, "at byte 0", "impossible", "sharebroker repair-data-dir "+dir)
	repairDir(t, dir, "cut "+seg+" at byte 0", "14 whole batches, 14 records, offsets 1-14", "lost+found")
	kept, _ := filepath.Glob(filepath.Join(dir, "lost+found", "*", "logs", "*", "0", filepath.Base(seg)))
	if len(kept) != 1 {
		t.Fatalf("the cut segment is not in lost+found: %v", kept)
	}
	p := startDataDir(t, dir)
	if _, hw := rawLog(t, p.addr, realTopic); hw != 0 {
		t.Errorf("high watermark %d after the repair, want 0", hw)
	}
}

// no-silent-loss, set-aside-not-deleted: one flipped bit in the length of
// meta.log's first record (0x50 -> 0x00800050; issue 21: meta.log cut to
// nothing and every segment deleted) refuses the start with every file
// kept; after the repair the segments of the topic meta.log no longer
// knows are in lost+found, not deleted.
func TestDataDirMetaLengthBitFlipRefused(t *testing.T) {
	dir := t.TempDir()
	copyDataDir(t, realDataDir(t), dir)
	meta := filepath.Join(dir, "meta.log")
	seg := theSegment(t, dir)
	segBytes, _ := os.ReadFile(seg)
	b, _ := os.ReadFile(meta)
	overwrite(t, meta, 1, []byte{b[1] | 0x80})
	startRefused(t, dir, meta, "at byte 0", "a whole valid record starts after it", "sharebroker repair-data-dir "+dir)
	repairDir(t, dir, "cut "+meta+" at byte 0", "the metadata log does not know its topic")
	rel, _ := filepath.Rel(dir, seg)
	kept, _ := filepath.Glob(filepath.Join(dir, "lost+found", "*", rel))
	if len(kept) != 1 {
		t.Fatalf("%s is not in lost+found: %v", rel, kept)
	}
	if got, _ := os.ReadFile(kept[0]); !bytes.Equal(got, segBytes) {
		t.Fatalf("the segment set aside has %d bytes, it had %d", len(got), len(segBytes))
	}
	startDataDir(t, dir)
}

// no-silent-loss: a bad length in the record before the ACL record
// (issue 21: the ACL and SCRAM records after it dropped silently) refuses
// the start at that record; the repair reports the ACL and SCRAM records
// it cut.
func TestDataDirMetaBadLengthBeforeACLRefused(t *testing.T) {
	dir := t.TempDir()
	copyDataDir(t, realDataDir(t), dir)
	meta := filepath.Join(dir, "meta.log")
	pos, ops := metaRecordsAt(t, meta)
	k := -1
	for i, op := range ops {
		if op == "acl" {
			k = i
			break
		}
	}
	if k < 1 || ops[len(ops)-1] != "scram" {
		t.Fatalf("meta.log ops %v: want an acl record after another, and scram last", ops)
	}
	bad := pos[k-1]
	overwrite(t, meta, bad, []byte{0, 0, 0x10, 0})
	at := fmt.Sprintf("at byte %d", bad)
	startRefused(t, dir, meta, at, "sharebroker repair-data-dir "+dir)
	repairDir(t, dir, fmt.Sprintf("cut %s %s", meta, at), "1 acl", "1 scram")
	startDataDir(t, dir)
}

// no-symlinks: a segment reached through a symbolic link refuses the
// start with a message naming it, and the file it points to — here with a
// torn tail — is not cut.
func TestDataDirSymlinkSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	copyDataDir(t, realDataDir(t), dir)
	seg := theSegment(t, dir)
	target := filepath.Join(t.TempDir(), "elsewhere.log")
	b, _ := os.ReadFile(seg)
	torn := append(append([]byte(nil), b...), b[:30]...)
	if err := os.WriteFile(target, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(seg); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, seg); err != nil {
		t.Fatal(err)
	}
	startRefused(t, dir, "symbolic link", seg)
	if got, _ := os.ReadFile(target); !bytes.Equal(got, torn) {
		t.Fatalf("the link's target changed: %d bytes, was %d", len(got), len(torn))
	}
}
