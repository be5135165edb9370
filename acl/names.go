package acl

import "strings"

// Parsing the names of the codes, for ACLs given as text (a seed at start,
// docs/seeding.md). Two spellings are accepted, as Kafka accepts them:
// the enum's own name in any case (AclOperation.fromString and its
// siblings: READ, describe_configs) and the Pascal case kafka-acls.sh
// takes (SecurityUtils.operation: DescribeConfigs, TransactionalId).
// Dashes count as underscores (transactional-id), the way kafka-acls.sh
// spells its resource options. Each answers false for a name it does not
// know, and for the codes only filters may use (ANY, MATCH, UNKNOWN).

// ParseResourceType reads a resource type's name: TOPIC, GROUP, CLUSTER,
// TRANSACTIONAL_ID, DELEGATION_TOKEN or USER.
func ParseResourceType(name string) (ResourceType, bool) {
	i, ok := lookupName(resourceNames[:], name)
	t := ResourceType(i)
	return t, ok && t != ResourceAny
}

// ParsePatternType reads LITERAL or PREFIXED.
func ParsePatternType(name string) (PatternType, bool) {
	i, ok := lookupName(patternNames[:], name)
	p := PatternType(i)
	return p, ok && (p == PatternLiteral || p == PatternPrefixed)
}

// ParseOperation reads an operation's name: ALL, READ, WRITE, ...
func ParseOperation(name string) (Operation, bool) {
	i, ok := lookupName(operationNames[:], name)
	o := Operation(i)
	return o, ok && o != OpAny
}

// ParsePermission reads ALLOW or DENY.
func ParsePermission(name string) (Permission, bool) {
	i, ok := lookupName(permissionNames[:], name)
	p := Permission(i)
	return p, ok && p != PermissionAny
}

// lookupName finds name among names (index 0, UNKNOWN, never matches),
// ignoring case, underscores and dashes.
func lookupName(names []string, name string) (int, bool) {
	squash := func(s string) string {
		return strings.ToUpper(strings.NewReplacer("_", "", "-", "").Replace(strings.TrimSpace(s)))
	}
	want := squash(name)
	for i := 1; i < len(names); i++ {
		if squash(names[i]) == want {
			return i, true
		}
	}
	return 0, false
}
