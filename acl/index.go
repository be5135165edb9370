package acl

import "strings"

// typeIndex holds one resource type's bindings the way Authorize asks for
// them: LITERAL ones by their name ("*" among them), PREFIXED ones in a
// list. A decision then costs the bindings that name its resource, "*"
// and the prefixed ones, not every binding of the type: with one LITERAL
// ACL per topic, Metadata for all topics was the topics times the ACLs
// (issue 22). Kafka's StandardAuthorizerData gets the same from its set
// sorted by resource name, which it walks from the name down.
type typeIndex struct {
	literal  map[string][]Binding
	prefixed []Binding
}

func (x *typeIndex) add(b Binding) {
	switch b.PatternType {
	case PatternLiteral:
		if x.literal == nil {
			x.literal = make(map[string][]Binding)
		}
		x.literal[b.ResourceName] = append(x.literal[b.ResourceName], b)
	case PatternPrefixed:
		x.prefixed = append(x.prefixed, b)
	}
}

// applying calls fn with each binding whose pattern covers the resource
// called name (appliesTo), until fn returns false.
func (x *typeIndex) applying(name string, fn func(Binding) bool) {
	for _, b := range x.literal[name] {
		if !fn(b) {
			return
		}
	}
	if name != Wildcard {
		for _, b := range x.literal[Wildcard] {
			if !fn(b) {
				return
			}
		}
	}
	for _, b := range x.prefixed {
		if strings.HasPrefix(name, b.ResourceName) && !fn(b) {
			return
		}
	}
}
