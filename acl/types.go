// Package acl is sharebroker's authorizer: ACL bindings, their validation,
// the filters DescribeAcls and DeleteAcls match with, and the decision
// whether a principal may perform an operation on a resource, as Kafka's
// StandardAuthorizer makes it (docs/security.md, "ACLs").
//
// It speaks plain Go values: the broker translates the wire's int8 codes
// (the same numbers as Kafka's enums, used here as they are) and maps the
// errors to Kafka error codes. Standard library only.
package acl

import "strings"

// ResourceType is Kafka's ResourceType; the codes are Kafka's.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// NumResourceTypes bounds the codes: a per-type array has this length.
const NumResourceTypes = 8

var resourceNames = [NumResourceTypes]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER",
	"TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

func (t ResourceType) String() string {
	if t < 0 || int(t) >= len(resourceNames) {
		return "UNKNOWN"
	}
	return resourceNames[t]
}

// Known reports whether t is a code Kafka's ResourceType.fromCode knows;
// any other code reads as UNKNOWN there.
func (t ResourceType) Known() bool { return t > ResourceUnknown && int(t) < len(resourceNames) }

// PatternType is Kafka's PatternType.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters only: any pattern type, the name matched exactly
	PatternMatch    PatternType = 2 // filters only: every pattern that would apply to the name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

func (p PatternType) String() string {
	if p < 0 || int(p) >= len(patternNames) {
		return "UNKNOWN"
	}
	return patternNames[p]
}

// Known reports whether p is a code other than UNKNOWN.
func (p PatternType) Known() bool { return p > PatternUnknown && int(p) < len(patternNames) }

// Operation is Kafka's AclOperation.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

var operationNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
	"DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
	"CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"}

func (o Operation) String() string {
	if o < 0 || int(o) >= len(operationNames) {
		return "UNKNOWN"
	}
	return operationNames[o]
}

// Known reports whether o is a code other than UNKNOWN.
func (o Operation) Known() bool { return o > OpUnknown && int(o) < len(operationNames) }

// Permission is Kafka's AclPermissionType.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

func (p Permission) String() string {
	if p < 0 || int(p) >= len(permissionNames) {
		return "UNKNOWN"
	}
	return permissionNames[p]
}

// Known reports whether p is a code other than UNKNOWN.
func (p Permission) Known() bool { return p > PermissionUnknown && int(p) < len(permissionNames) }

const (
	// Wildcard as a resource name (LITERAL) matches every resource of its
	// type; as a host, every host.
	Wildcard = "*"
	// WildcardPrincipal matches every principal.
	WildcardPrincipal = "User:*"
	// ClusterName is the one name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// supported lists, per resource type, the operations an ACL on it can
// grant, in Kafka's AclEntry.supportedOperations order: the authorized
// operations fields of Metadata, DescribeGroups and the describe APIs
// report these.
var supported = [NumResourceTypes][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite, OpTwoPhaseCommit},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// SupportedOperations is the operations an ACL on resources of type t
// can grant.
func SupportedOperations(t ResourceType) []Operation {
	if !t.Known() {
		return nil
	}
	return supported[t]
}

// OperationsBits is a set of operations as the bit field Kafka's
// Utils.to32BitField makes: bit n set for operation code n.
func OperationsBits(ops []Operation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << uint(op)
	}
	return bits
}

// Binding is one ACL: who (principal, host) may or may not (permission)
// do what (operation) to which resources (type, name, pattern).
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

func (b Binding) String() string {
	return "(pattern=" + b.ResourceType.String() + ":" + b.PatternType.String() + ":" + b.ResourceName +
		", principal=" + b.Principal + ", host=" + b.Host + ", operation=" + b.Operation.String() +
		", permissionType=" + b.Permission.String() + ")"
}

// Filter selects bindings for DescribeAcls and DeleteAcls. A nil string
// field matches any value, as do the ANY codes; PatternMatch selects every
// binding that would apply to the resource named.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Unknown reports whether the filter names an UNKNOWN code (or one Kafka
// does not know) in any field; Kafka refuses such a filter when it parses
// the request.
func (f Filter) Unknown() bool {
	return !f.ResourceType.Known() || !f.PatternType.Known() || !f.Operation.Known() || !f.Permission.Known()
}

// Matches reports whether f selects b, as Kafka's AclBindingFilter.matches
// decides.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) && f.matchesEntry(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	// MATCH: the bindings that would apply to a resource called name.
	switch b.PatternType {
	case PatternLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

func (f Filter) matchesEntry(b Binding) bool {
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}
