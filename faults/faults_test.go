package faults

import (
	"strings"
	"testing"
	"time"
)

// fakeAPIs serves keys 0 to 10; key 10's response has no error code.
type fakeAPIs struct{}

func (fakeAPIs) Served(key int16) bool       { return key >= 0 && key <= 10 }
func (fakeAPIs) Name(key int16) string       { return map[int16]string{0: "Produce", 10: "Quiet"}[key] }
func (fakeAPIs) HasErrorCode(key int16) bool { return key != 10 }

func key(k int16) *int16 { return &k }

func mustNew(t *testing.T, in Spec) Fault {
	t.Helper()
	f, err := New(in, fakeAPIs{})
	if err != nil {
		t.Fatalf("New(%+v): %v", in, err)
	}
	return f
}

// names returns a names func for a request naming topics and groups, and
// a counter of its calls.
func names(topics, groups []string) (func() ([]string, []string), *int) {
	calls := new(int)
	return func() ([]string, []string) { *calls++; return topics, groups }, calls
}

func TestNewAccepts(t *testing.T) {
	f := mustNew(t, Spec{APIKey: key(0), ErrorCode: 6, Topic: "t"})
	if f.Remaining != 1 || f.API != "Produce" || f.ErrorCode != 6 || f.Topic != "t" || f.ID != 0 {
		t.Errorf("error fault: %+v (want count 1 by default, the key's name, no ID before arming)", f)
	}
	f = mustNew(t, Spec{APIKey: key(1), Latency: "1.5s", Count: 3})
	if f.Latency != 1500*time.Millisecond || f.Remaining != 3 {
		t.Errorf("latency fault: %+v", f)
	}
	f = mustNew(t, Spec{APIKey: key(10), Drop: true, Count: MaxCount})
	if !f.Drop || f.Remaining != MaxCount {
		t.Errorf("drop fault on a key without an error code: %+v", f)
	}
	mustNew(t, Spec{APIKey: key(2), Latency: MaxLatency.String()})
}

func TestNewRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		in   Spec
		want string
	}{
		"no key":         {Spec{ErrorCode: 6}, "api_key is required"},
		"unserved key":   {Spec{APIKey: key(120), ErrorCode: 6}, "api_key 120: not an API this broker serves"},
		"no kind":        {Spec{APIKey: key(0)}, "want exactly one of"},
		"two kinds":      {Spec{APIKey: key(0), ErrorCode: 6, Drop: true}, "want exactly one of"},
		"three kinds":    {Spec{APIKey: key(0), ErrorCode: 6, Latency: "1s", Drop: true}, "want exactly one of"},
		"no error code":  {Spec{APIKey: key(10), ErrorCode: 6}, "api_key 10 (Quiet): its response has no error code to set"},
		"bad latency":    {Spec{APIKey: key(0), Latency: "soon"}, `latency "soon"`},
		"long latency":   {Spec{APIKey: key(0), Latency: "31s"}, `latency "31s"`},
		"zero latency":   {Spec{APIKey: key(0), Latency: "0s"}, `latency "0s"`},
		"negative":       {Spec{APIKey: key(0), Latency: "-1s"}, `latency "-1s"`},
		"count too low":  {Spec{APIKey: key(0), Count: -1, Drop: true}, "count -1: want 1 to 1000000"},
		"count too high": {Spec{APIKey: key(0), Count: MaxCount + 1, Drop: true}, "count 1000001"},
		// The key is checked before the count, the count before the kind.
		"unserved and bad count": {Spec{APIKey: key(-1), Count: -1}, "not an API this broker serves"},
		"bad count and no kind":  {Spec{APIKey: key(0), Count: -1}, "count -1"},
	} {
		_, err := New(tc.in, fakeAPIs{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

func TestTakeMatchesKeyTopicAndGroup(t *testing.T) {
	var s Store
	s.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 6, Topic: "t", Count: 10}))
	s.Add(mustNew(t, Spec{APIKey: key(1), ErrorCode: 7, Group: "g", Count: 10}))
	s.Add(mustNew(t, Spec{APIKey: key(2), Drop: true, Topic: "t", Group: "g", Count: 10}))
	for _, tc := range []struct {
		name           string
		apiKey         int16
		topics, groups []string
		want           int16 // the taken fault's key, -1 for none
	}{
		{"other key", 3, []string{"t"}, []string{"g"}, -1},
		{"topic named", 0, []string{"a", "t"}, nil, 0},
		{"topic not named", 0, []string{"a"}, []string{"t"}, -1},
		{"group named", 1, nil, []string{"g"}, 1},
		{"group not named", 1, []string{"g"}, nil, -1},
		{"both named", 2, []string{"t"}, []string{"g"}, 2},
		{"only the topic named", 2, []string{"t"}, nil, -1},
		{"only the group named", 2, nil, []string{"g"}, -1},
	} {
		fn, _ := names(tc.topics, tc.groups)
		got := s.Take(tc.apiKey, fn)
		switch {
		case tc.want < 0 && got != nil:
			t.Errorf("%s: took %+v", tc.name, got)
		case tc.want >= 0 && (got == nil || got.APIKey != tc.want):
			t.Errorf("%s: took %+v, want the fault of key %d", tc.name, got, tc.want)
		}
	}
}

// The first fault armed that matches takes the request; the request's
// names are looked for once, and only when a fault of its key needs them.
func TestTakeOrderAndNames(t *testing.T) {
	var s Store
	if got := s.Take(0, func() ([]string, []string) { panic("names asked with nothing armed") }); got != nil {
		t.Fatalf("empty store took %+v", got)
	}
	s.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 1, Topic: "x"}))
	s.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 2, Group: "y"}))
	s.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 3}))
	s.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 4}))
	fn, calls := names([]string{"t"}, []string{"g"})
	if got := s.Take(0, fn); got == nil || got.ErrorCode != 3 {
		t.Fatalf("took %+v, want the first armed fault that matches (code 3)", got)
	}
	if *calls != 1 {
		t.Errorf("names called %d times for one request, want 1", *calls)
	}
	var s2 Store
	s2.Add(mustNew(t, Spec{APIKey: key(0), ErrorCode: 3}))
	s2.Add(mustNew(t, Spec{APIKey: key(1), ErrorCode: 3, Topic: "t"}))
	fn, calls = names(nil, nil)
	if got := s2.Take(0, fn); got == nil || *calls != 0 {
		t.Errorf("took %+v with %d calls of names, want a take without looking for names", got, *calls)
	}
}

func TestCountingAndIDs(t *testing.T) {
	var s Store
	a := s.Add(mustNew(t, Spec{APIKey: key(0), Drop: true, Count: 2}))
	b := s.Add(mustNew(t, Spec{APIKey: key(1), Latency: "1s"}))
	if a.ID != 1 || b.ID != 2 {
		t.Fatalf("IDs %d, %d, want 1, 2 in arming order", a.ID, b.ID)
	}
	none := func() ([]string, []string) { return nil, nil }
	got := s.Take(0, none)
	if got == nil || got.ID != 1 || got.Remaining != 1 {
		t.Fatalf("first take: %+v, want fault 1 with 1 left", got)
	}
	got.Remaining = 99 // a copy: the store's fault is unchanged
	if snap := s.Snapshot(); len(snap) != 2 || snap[0].Remaining != 1 || snap[1].ID != 2 {
		t.Fatalf("snapshot after one take: %+v", snap)
	}
	if got := s.Take(0, none); got == nil || got.Remaining != 0 {
		t.Fatalf("second take: %+v, want the last of fault 1", got)
	}
	if got := s.Take(0, none); got != nil {
		t.Fatalf("fault outlived its count: %+v", got)
	}
	if snap := s.Snapshot(); len(snap) != 1 || snap[0].ID != 2 {
		t.Fatalf("snapshot after fault 1 ran out: %+v", snap)
	}
	c := s.Add(mustNew(t, Spec{APIKey: key(0), Drop: true}))
	if c.ID != 3 {
		t.Errorf("ID after a fault ran out: %d, want 3 (IDs are not reused)", c.ID)
	}
	if n := s.Clear(); n != 2 {
		t.Errorf("Clear: %d, want 2", n)
	}
	if got := s.Take(0, none); got != nil || len(s.Snapshot()) != 0 {
		t.Errorf("after Clear: took %+v, armed %+v", got, s.Snapshot())
	}
	if n := s.Clear(); n != 0 {
		t.Errorf("second Clear: %d, want 0", n)
	}
}

// Concurrent takes use up exactly Count requests between them.
func TestTakeConcurrent(t *testing.T) {
	var s Store
	s.Add(mustNew(t, Spec{APIKey: key(0), Drop: true, Count: 100}))
	taken := make(chan bool)
	for range 8 {
		go func() {
			n := 0
			for range 50 {
				if s.Take(0, func() ([]string, []string) { return nil, nil }) != nil {
					n++
				}
			}
			for range n {
				taken <- true
			}
			taken <- false
		}()
	}
	total, done := 0, 0
	for done < 8 {
		if <-taken {
			total++
		} else {
			done++
		}
	}
	if total != 100 {
		t.Errorf("%d requests taken, want 100", total)
	}
}
