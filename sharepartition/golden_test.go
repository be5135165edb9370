package sharepartition

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden scripts' expected output")

// TestGolden runs the scripts in testdata/*.txt. Each block is one command,
// a line "----", and the expected output (the command's result, then the
// window), ending at a blank line. Run with -update to regenerate and
// review the diff.
//
// Commands:
//
//	config limit=N locks=N lock=DUR renew=BOOL rc=BOOL   new partition at 0
//	log FIRST-LAST[/SIZE][:aborted|:control] ...        append producer batches
//	acquire MEMBER max=N [mode=0|1] [bs=N]              read from the next fetch offset
//	ack MEMBER FIRST-LAST TYPE[,TYPE...] [; FIRST-LAST TYPE...]
//	advance DUR
//	release MEMBER                                      session closed
//	logstart OFFSET
//	compact FIRST-LAST                                  drop producer batches inside the range
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runGolden(t, file) })
	}
}

func runGolden(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h *harness
	var out strings.Builder
	blocks := strings.Split(strings.TrimSpace(string(data)), "\n\n")
	for _, block := range blocks {
		cmd, want, _ := strings.Cut(block, "\n----\n")
		cmd = strings.TrimSuffix(cmd, "\n----")
		var got string
		lines := strings.Split(cmd, "\n")
		last := lines[len(lines)-1]
		if strings.HasPrefix(strings.TrimSpace(last), "#") {
			out.WriteString(block + "\n\n") // a comment block
			continue
		}
		got, h = goldenStep(t, h, last)
		if !*update && strings.TrimSpace(want) != strings.TrimSpace(got) {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", file, last, got, want)
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", cmd, strings.TrimSpace(got))
	}
	if *update {
		if err := os.WriteFile(file, []byte(strings.TrimSpace(out.String())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func goldenStep(t *testing.T, h *harness, line string) (string, *harness) {
	f := strings.Fields(line)
	kv := map[string]string{}
	for _, w := range f[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			kv[k] = v
		}
	}
	num := func(k string, def int) int {
		if v, ok := kv[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
		return def
	}
	var res string
	switch f[0] {
	case "config":
		h = newHarness(t, func(c *Config) {
			c.DeliveryCountLimit = int16(num("limit", 5))
			c.MaxRecordLocks = int64(num("locks", 2000))
			if v, ok := kv["lock"]; ok {
				c.LockDuration, _ = time.ParseDuration(v)
			}
			c.RenewEnabled = kv["renew"] != "false"
			c.ReadCommitted = kv["rc"] == "true"
		})
	case "log":
		for _, w := range f[1:] {
			spec, flag, _ := strings.Cut(w, ":")
			rng, size, _ := strings.Cut(spec, "/")
			first, last := parseRange(t, rng)
			n := last - first + 1
			if size != "" {
				n, _ = strconv.ParseInt(size, 10, 64)
			}
			for _, lb := range batches(first, last+1, n) {
				lb.Aborted, lb.Control = flag == "aborted", flag == "control"
				h.log = append(h.log, lb)
			}
		}
	case "acquire":
		got := h.fetch(f[1], num("max", 500), AcquireMode(num("mode", 0)), num("bs", 0))
		var parts []string
		for _, r := range got {
			parts = append(parts, fmt.Sprintf("[%d,%d]x%d", r.FirstOffset, r.LastOffset, r.DeliveryCount))
		}
		res = "acquired " + strings.Join(parts, " ")
	case "ack":
		var acks []AckBatch
		for _, part := range strings.Split(strings.Join(f[2:], " "), ";") {
			w := strings.Fields(part)
			first, last := parseRange(t, w[0])
			ab := AckBatch{FirstOffset: first, LastOffset: last}
			for _, name := range strings.Split(w[1], ",") {
				ab.Types = append(ab.Types, parseAckType(t, name))
			}
			acks = append(acks, ab)
		}
		err := h.sp.Acknowledge(f[1], acks, h.now())
		h.check()
		res = fmt.Sprintf("ack: %v", err)
	case "advance":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			t.Fatal(err)
		}
		h.advance(d)
	case "release":
		h.sp.ReleaseMember(f[1], ReasonSessionClosed, h.now())
		h.check()
	case "compact":
		first, last := parseRange(t, f[1])
		kept := h.log[:0:0]
		for _, lb := range h.log {
			if lb.BaseOffset < first || lb.LastOffset > last {
				kept = append(kept, lb)
			}
		}
		h.log = kept
	case "logstart":
		o, _ := strconv.ParseInt(f[1], 10, 64)
		h.sp.LogStartMoved(o, h.now())
		h.check()
	default:
		t.Fatalf("unknown command %q", line)
	}
	return strings.TrimSpace(res + "\n" + window(h)), h
}

func window(h *harness) string {
	s := h.sp.Snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "spso=%d speo=%d next=%d in-flight=%d", s.SPSO, s.SPEO, s.NextFetchOffset, s.InFlight)
	for _, r := range s.Ranges {
		fmt.Fprintf(&b, "\n  [%d,%d] %v", r.FirstOffset, r.LastOffset, r.State)
		if r.Owner != "" {
			fmt.Fprintf(&b, " %s", r.Owner)
		}
		fmt.Fprintf(&b, " count=%d", r.DeliveryCount)
		if !r.LockDeadline.IsZero() {
			fmt.Fprintf(&b, " lock=%v", r.LockDeadline.Sub(h.now()))
		}
		if r.Split {
			b.WriteString(" split")
		}
	}
	return b.String()
}

func parseRange(t *testing.T, s string) (int64, int64) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last := first
	var err2 error
	if ok {
		last, err2 = strconv.ParseInt(b, 10, 64)
	}
	if err1 != nil || err2 != nil {
		t.Fatalf("bad range %q", s)
	}
	return first, last
}

func parseAckType(t *testing.T, s string) AckType {
	for ty := AckGap; ty <= AckRenew; ty++ {
		if strings.EqualFold(ty.String(), s) {
			return ty
		}
	}
	t.Fatalf("bad ack type %q", s)
	return 0
}
