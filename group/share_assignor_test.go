package group

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func tid(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func topicsOf(parts map[string]int32) map[string]TopicInfo {
	out := make(map[string]TopicInfo)
	for name, n := range parts {
		out[name] = TopicInfo{Name: name, ID: tid(name), Partitions: n}
	}
	return out
}

// render prints an assignment as "m0=A0,A1 m1=B0" for exact comparison.
func render(members []assignMember, got map[string]map[topicPartition]bool) string {
	var parts []string
	for _, m := range members {
		var tps []string
		for tp := range got[m.id] {
			tps = append(tps, fmt.Sprintf("%s%d", strings.TrimRight(string(tp.id[:]), "\x00"), tp.partition))
		}
		slices.Sort(tps)
		parts = append(parts, m.id+"="+strings.Join(tps, ","))
	}
	return strings.Join(parts, " ")
}

func members(spec ...string) []assignMember {
	// "m0:A,B" -> member m0 subscribed to A and B.
	var out []assignMember
	for _, s := range spec {
		id, topics, _ := strings.Cut(s, ":")
		ts := strings.Split(topics, ",")
		slices.Sort(ts)
		out = append(out, assignMember{id: id, topics: ts})
	}
	return out
}

func TestAssignSimple(t *testing.T) {
	tests := []struct {
		name    string
		members []assignMember
		topics  map[string]int32
		want    string
	}{
		{"two members four partitions", members("m0:T", "m1:T"), map[string]int32{"T": 4}, "m0=T0,T2 m1=T1,T3"},
		{"three members one partition all share", members("m0:T", "m1:T", "m2:T"), map[string]int32{"T": 1}, "m0=T0 m1=T0 m2=T0"},
		{"three members two partitions", members("m0:T", "m1:T", "m2:T"), map[string]int32{"T": 2}, "m0=T0,T1 m1=T0 m2=T1"},
		{"five members two partitions", members("m0:T", "m1:T", "m2:T", "m3:T", "m4:T"), map[string]int32{"T": 2}, "m0=T0,T1 m1=T0 m2=T0 m3=T1 m4=T1"},
		{"homogeneous pools topics", members("m0:A,B", "m1:A,B"), map[string]int32{"A": 1, "B": 1}, "m0=A0 m1=B0"},
		{"homogeneous pooled uneven", members("m0:A,B", "m1:A,B", "m2:A,B"), map[string]int32{"A": 2, "B": 2}, "m0=A0,B1 m1=A1 m2=B0"},
		{"one member gets everything", members("m0:A,B"), map[string]int32{"A": 2, "B": 1}, "m0=A0,A1,B0"},
		{"missing topic ignored", members("m0:A,Z", "m1:A,Z"), map[string]int32{"A": 2}, "m0=A0 m1=A1"},
		{"no partitions", members("m0:Z"), map[string]int32{}, "m0="},
		{"heterogeneous per topic", members("m0:A", "m1:A,B"), map[string]int32{"A": 2, "B": 2}, "m0=A0 m1=A1,B0,B1"},
		{"heterogeneous sharing", members("m0:A", "m1:A,B", "m2:B"), map[string]int32{"A": 1, "B": 1}, "m0=A0 m1=A0,B0 m2=B0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := assignSimple(tc.members, topicsOf(tc.topics), nil)
			if s := render(tc.members, got); s != tc.want {
				t.Fatalf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// TestAssignSimpleSticky checks that a recomputation keeps what it can.
func TestAssignSimpleSticky(t *testing.T) {
	topics := topicsOf(map[string]int32{"T": 6})
	three := members("m0:T", "m1:T", "m2:T")
	first := assignSimple(three, topics, nil)
	if s := render(three, first); s != "m0=T0,T3 m1=T1,T4 m2=T2,T5" {
		t.Fatalf("first: %s", s)
	}

	tests := []struct {
		name    string
		members []assignMember
		want    string
	}{
		{"middle member leaves", members("m0:T", "m2:T"), "m0=T0,T1,T3 m2=T2,T4,T5"},
		{"member joins takes from members above quota [2,1,2,1]", members("m0:T", "m1:T", "m2:T", "m3:T"), "m0=T0,T3 m1=T1 m2=T2,T5 m3=T4"},
		{"same members", three, "m0=T0,T3 m1=T1,T4 m2=T2,T5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := assignSimple(tc.members, topics, first)
			if s := render(tc.members, got); s != tc.want {
				t.Fatalf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// TestAssignSimpleJoinManyPartitions is a second member joining a member
// that holds 4096 partitions: the first keeps its lowest half, the
// newcomer gets the rest (the trim of step 3 over thousands of
// partitions, which BenchmarkAssignSimpleJoin times).
func TestAssignSimpleJoinManyPartitions(t *testing.T) {
	const n = 4096
	topics := topicsOf(map[string]int32{"T": n})
	one := members("m0:T")
	two := members("m0:T", "m1:T")
	got := assignSimple(two, topics, assignSimple(one, topics, nil))
	for p := int32(0); p < n; p++ {
		tp := topicPartition{tid("T"), p}
		if keeps := p < n/2; got["m0"][tp] != keeps || got["m1"][tp] == keeps {
			t.Fatalf("partition %d: m0 holds %v, m1 holds %v; want m0 to hold exactly the lowest half", p, got["m0"][tp], got["m1"][tp])
		}
	}
}

// BenchmarkAssignSimpleJoin times a second member joining a member that
// holds all 4096 partitions of a topic.
func BenchmarkAssignSimpleJoin(b *testing.B) {
	topics := topicsOf(map[string]int32{"T": 4096})
	prev := assignSimple(members("m0:T"), topics, nil)
	two := members("m0:T", "m1:T")
	for b.Loop() {
		assignSimple(two, topics, prev)
	}
}

// partIndex finds every partition of runs of topics and falls back to a
// full index for any other shape.
func TestPartIndex(t *testing.T) {
	a, b := tid("A"), tid("B")
	for name, parts := range map[string][]topicPartition{
		"runs":           {{a, 0}, {a, 1}, {a, 2}, {b, 0}, {b, 1}},
		"out of order":   {{a, 1}, {a, 0}, {b, 0}},
		"topic twice":    {{a, 0}, {b, 0}, {a, 1}},
		"starts above 0": {{a, 2}, {a, 3}},
		"a gap in a run": {{a, 0}, {a, 2}},
		"one partition":  {{b, 0}},
		"nothing at all": nil,
	} {
		t.Run(name, func(t *testing.T) {
			index := partIndex(parts)
			for i, tp := range parts {
				if got, ok := index(tp); !ok || got != i {
					t.Errorf("index(%v) = %d, %v; want %d", tp, got, ok, i)
				}
			}
			for _, absent := range []topicPartition{{a, 7}, {b, -1}, {tid("C"), 0}} {
				if slices.Contains(parts, absent) {
					continue
				}
				if got, ok := index(absent); ok {
					t.Errorf("index(%v) = %d, true for a partition not in parts", absent, got)
				}
			}
		})
	}
}
