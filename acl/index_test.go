package acl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// appliesTo is the rule the index answers (Authorize's doc): binding b's
// pattern covers the resource called name when it is LITERAL name or "*",
// or PREFIXED with a prefix of name.
func appliesTo(b Binding, name string) bool {
	switch b.PatternType {
	case PatternLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// TestTypeIndexApplying: for random bindings (literal, "*", prefixed) and
// names, after creations and deletions, the index yields exactly the
// bindings of the type that appliesTo says cover the name, each once.
func TestTypeIndexApplying(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	a := New(Config{})
	names := []string{"*", "a", "ab", "abc", "b", "ba", "orders", "orders-eu", "x"}
	random := func() Binding {
		b := Binding{ResourceType: ResourceTopic, PatternType: PatternLiteral, Operation: OpRead,
			Permission: Allow, Principal: "User:u", Host: "*"}
		b.ResourceName = names[rng.IntN(len(names))]
		if rng.IntN(3) == 0 && b.ResourceName != Wildcard {
			b.PatternType = PatternPrefixed
		}
		if rng.IntN(4) == 0 {
			b.ResourceType = ResourceGroup
		}
		b.Principal = fmt.Sprintf("User:u%d", rng.IntN(3))
		return b
	}
	check := func(step int) {
		t.Helper()
		for typ := range a.byType {
			for _, name := range append(names, "abcd", "orders-us", "") {
				var want, got []Binding
				for _, b := range a.byType[typ] {
					if appliesTo(b, name) {
						want = append(want, b)
					}
				}
				a.index[typ].applying(name, func(b Binding) bool { got = append(got, b); return true })
				key := func(b Binding) string { return fmt.Sprint(b) }
				slices.SortFunc(want, func(x, y Binding) int { return strings.Compare(key(x), key(y)) })
				slices.SortFunc(got, func(x, y Binding) int { return strings.Compare(key(x), key(y)) })
				if !slices.Equal(got, want) {
					t.Fatalf("step %d, type %d, name %q: index yields %v, want %v", step, typ, name, got, want)
				}
			}
		}
	}
	for step := range 300 {
		if rng.IntN(4) == 0 {
			victim := random()
			a.Delete([]Filter{{ResourceType: victim.ResourceType, PatternType: victim.PatternType, ResourceName: &victim.ResourceName,
				Operation: OpAny, Permission: PermissionAny}})
		} else {
			a.Create([]Binding{random()})
		}
		check(step)
	}
}

// BenchmarkAuthorizeOneACLPerTopic: a topic's decision among 20,000
// topics, each with a LITERAL ACL of its own (plus one PREFIXED): what
// Metadata for all topics pays per topic.
func BenchmarkAuthorizeOneACLPerTopic(b *testing.B) {
	a := New(Config{})
	var bindings []Binding
	for i := range 20000 {
		bindings = append(bindings, Binding{ResourceType: ResourceTopic, ResourceName: fmt.Sprintf("topic-%05d", i),
			PatternType: PatternLiteral, Operation: OpDescribe, Permission: Allow, Principal: "User:app", Host: "*"})
	}
	bindings = append(bindings, Binding{ResourceType: ResourceTopic, ResourceName: "topic-1", PatternType: PatternPrefixed,
		Operation: OpWrite, Permission: Allow, Principal: "User:app", Host: "*"})
	a.Restore(bindings)
	b.ResetTimer()
	for i := range b.N {
		if !a.Authorize("User:app", "127.0.0.1", OpDescribe, ResourceTopic, bindings[i%20000].ResourceName) {
			b.Fatal("denied")
		}
	}
}
