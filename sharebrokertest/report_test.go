package sharebrokertest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// reportT is a test that has failed (or not), whose log and cleanups
// the real test keeps and runs itself.
type reportT struct {
	testing.TB
	failed bool

	mu       sync.Mutex
	logs     []string
	cleanups []func()
}

func (r *reportT) Failed() bool               { return r.failed }
func (r *reportT) Helper()                    {}
func (r *reportT) Cleanup(f func())           { r.cleanups = append(r.cleanups, f) }
func (r *reportT) Log(args ...any)            { r.add(fmt.Sprint(args...)) }
func (r *reportT) Logf(f string, args ...any) { r.add(fmt.Sprintf(f, args...)) }

func (r *reportT) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, s)
}

// end runs the cleanups as the testing package would at the end of the
// test, last first, and returns what was logged.
func (r *reportT) end() string {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// acquireOne starts a broker for rt, has worker-1 acquire offset 0 of
// jobs, lets its lock expire and acquire it again.
func acquireOne(t *testing.T, rt *reportT, opts ...sharebrokertest.Option) {
	t.Helper()
	opts = append([]sharebrokertest.Option{sharebrokertest.WithProperty("num.partitions", "1")}, opts...)
	b := sharebrokertest.Start(rt, opts...)
	e := &storyEnv{t: t, b: b}
	e.attach()
	if got := e.shareFetch(e.admin, -1, "worker-1", 0); len(got.AcquiredRecords) != 1 {
		t.Fatalf("acquired %+v", got.AcquiredRecords)
	}
	b.Advance(30 * time.Second)
	if got := e.shareFetch(e.admin, -1, "worker-1", 1); len(got.AcquiredRecords) != 1 {
		t.Fatalf("acquired again %+v", got.AcquiredRecords)
	}
}

// story-in-failures: a failed test's log gets the share groups' state and
// the record stories; a passing test's does not, nor a failed one's with
// WithoutFailureReport.
func TestFailureReport(t *testing.T) {
	failed := &reportT{TB: t, failed: true}
	acquireOne(t, failed)
	log := failed.end()
	for _, want := range []string{
		"share group \"g\"",
		"jobs-0 on node 0: SPSO 0, SPEO 0, 1 in flight, lag 1, next fetch 1",
		"0-0 ACQUIRED d2 owner worker-1 lock until 2026-01-01T00:01:00Z",
		"offset 0:",
		"2026-01-01T00:00:00Z acquired [0-0] member worker-1 delivery 1 lock until 2026-01-01T00:00:30Z",
		"2026-01-01T00:00:30Z lock_expired [0-0] member worker-1",
		"2026-01-01T00:00:30Z acquired [0-0] member worker-1 delivery 2",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the report lacks %q; log:\n%s", want, log)
		}
	}

	passed := &reportT{TB: t}
	acquireOne(t, passed)
	if log := passed.end(); strings.Contains(log, "share group") {
		t.Errorf("a passing test logged a report:\n%s", log)
	}
	off := &reportT{TB: t, failed: true}
	acquireOne(t, off, sharebrokertest.WithoutFailureReport())
	if log := off.end(); strings.Contains(log, "share group") {
		t.Errorf("WithoutFailureReport still logged a report:\n%s", log)
	}
}
