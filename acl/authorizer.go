package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrInvalid is why an ACL cannot be created: Kafka's INVALID_REQUEST.
// The errors Validate returns match it with errors.Is and read as the
// message Kafka gives.
var ErrInvalid = errors.New("invalid ACL")

// invalid is a validation error: its text is Kafka's message alone.
type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error { return invalid(fmt.Sprintf(format, args...)) }

// Config is the authorizer's configuration: Kafka's super.users and
// allow.everyone.if.no.acl.found.
type Config struct {
	// SuperUsers may do anything, whatever the ACLs say (rule
	// super-users).
	SuperUsers []string
	// AllowIfNoACL allows an operation on a resource no ACL names at all
	// (rule no-acl-default).
	AllowIfNoACL bool
}

// ParseSuperUsers splits super.users at semicolons, trimming spaces and
// dropping empty entries, as StandardAuthorizer reads it.
func ParseSuperUsers(value string) []string {
	var out []string
	for u := range strings.SplitSeq(value, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Authorizer holds the ACLs and decides requests. It is safe for
// concurrent use: connections authorize while admin requests change the
// ACLs.
type Authorizer struct {
	cfg Config

	mu sync.RWMutex // guards the fields below
	// acls in creation order (what DescribeAcls and GET /v1/acls list);
	// a binding appears once (rule acl-set).
	acls []Binding
	// byType holds the same bindings by resource type: a decision scans
	// only its type's section, as StandardAuthorizerData's sorted set does.
	byType [NumResourceTypes][]Binding
	// index holds them again by type as Authorize looks them up
	// (index.go).
	index [NumResourceTypes]typeIndex
	// journal, when set, hears every change (SetJournal).
	journal func(created, deleted []Binding)
}

// New returns an authorizer without ACLs.
func New(cfg Config) *Authorizer {
	return &Authorizer{cfg: cfg}
}

// Validate checks a binding to be created, in the order Kafka does: the
// broker's AclApis first (the CLUSTER name, an empty name), then the
// controller's AclControlManager.validateNewAcl. The error wraps
// ErrInvalid and reads as Kafka's message.
func Validate(b Binding) error {
	switch {
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return invalidf("The only valid name for the CLUSTER resource is %s", ClusterName)
	case b.ResourceName == "":
		return invalid("Invalid empty resource name")
	case b.ResourceType == ResourceUnknown || b.ResourceType == ResourceAny || !b.ResourceType.Known():
		return invalidf("Invalid resourceType %s", b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return invalidf("Invalid patternType %s", b.PatternType)
	case b.Operation == OpUnknown || b.Operation == OpAny || !b.Operation.Known():
		return invalidf("Invalid operation %s", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return invalidf("Invalid permissionType %s", b.Permission)
	case !strings.Contains(b.Principal, ":"):
		return invalidf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	return nil
}

// Create adds each valid binding and returns one error per binding (nil
// for success). A binding that exists already succeeds without a second
// copy, as Kafka's controller does.
func (a *Authorizer) Create(bindings []Binding) []error {
	errs := make([]error, len(bindings))
	var created []Binding
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, b := range bindings {
		if errs[i] = Validate(b); errs[i] != nil {
			continue
		}
		if slices.Contains(a.acls, b) {
			continue
		}
		a.add(b)
		created = append(created, b)
	}
	if a.journal != nil && len(created) > 0 {
		a.journal(created, nil)
	}
	return errs
}

func (a *Authorizer) add(b Binding) {
	a.acls = append(a.acls, b)
	a.byType[b.ResourceType] = append(a.byType[b.ResourceType], b)
	a.index[b.ResourceType].add(b)
}

// Restore adds bindings kept from before a restart, in their creation
// order, without telling the journal: it is where they came from. Invalid
// ones and ones held already are skipped.
func (a *Authorizer) Restore(bindings []Binding) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range bindings {
		if Validate(b) == nil && !slices.Contains(a.acls, b) {
			a.add(b)
		}
	}
}

// SetJournal has fn called after every change Create or Delete makes, with
// the bindings created or deleted, before they return and with the
// authorizer's lock held: fn sees the changes in the order they were made
// and must not call back into the authorizer.
func (a *Authorizer) SetJournal(fn func(created, deleted []Binding)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.journal = fn
}

// Describe returns the bindings f selects, in creation order.
func (a *Authorizer) Describe(f Filter) []Binding {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []Binding
	for _, b := range a.acls {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Delete removes the bindings each filter selects and returns them per
// filter. Every filter is matched against the ACLs as they were before the
// request, so a binding two filters select is reported by both, as Kafka's
// controller applies the removals of one request together.
func (a *Authorizer) Delete(filters []Filter) [][]Binding {
	out := make([][]Binding, len(filters))
	a.mu.Lock()
	defer a.mu.Unlock()
	gone := make(map[Binding]bool)
	for i, f := range filters {
		for _, b := range a.acls {
			if f.Matches(b) {
				out[i] = append(out[i], b)
				gone[b] = true
			}
		}
	}
	if len(gone) == 0 {
		return out
	}
	var deleted []Binding
	for _, b := range a.acls {
		if gone[b] {
			deleted = append(deleted, b)
		}
	}
	keep := func(b Binding) bool { return gone[b] }
	a.acls = slices.DeleteFunc(a.acls, keep)
	for t := range a.byType {
		a.byType[t] = slices.DeleteFunc(a.byType[t], keep)
		a.index[t] = typeIndex{}
		for _, b := range a.byType[t] {
			a.index[t].add(b)
		}
	}
	if a.journal != nil {
		a.journal(nil, deleted)
	}
	return out
}

// List returns every binding in creation order.
func (a *Authorizer) List() []Binding {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.acls)
}

// IsSuperUser reports whether principal is one of super.users.
func (a *Authorizer) IsSuperUser(principal string) bool {
	return slices.Contains(a.cfg.SuperUsers, principal)
}

// Authorize decides whether principal, connected from host, may perform op
// on the resource of type t called name, as StandardAuthorizerData.authorize
// does (rules super-users, deny-wins, implied-operations, prefixed-match,
// wildcard-match, no-acl-default):
//
//   - a super user is allowed;
//   - the ACLs that apply to the resource are those of its type whose
//     LITERAL name is name or "*", or whose PREFIXED name begins name;
//   - among them, one for the principal (or User:*) and the host (or "*")
//     whose operation matches decides: any DENY denies, else any ALLOW
//     allows;
//   - with none matching, the answer is allow.everyone.if.no.acl.found
//     when no ACL applies to the resource at all, and deny otherwise.
func (a *Authorizer) Authorize(principal, host string, op Operation, t ResourceType, name string) bool {
	if a.IsSuperUser(principal) {
		return true
	}
	if !t.Known() {
		return false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var allowed, applies, denied bool
	a.index[t].applying(name, func(b Binding) bool {
		applies = true
		switch entryMatches(b, principal, host, op) {
		case Deny:
			denied = true
			return false
		case Allow:
			allowed = true
		}
		return true
	})
	if denied {
		return false
	}
	if allowed {
		return true
	}
	return !applies && a.cfg.AllowIfNoACL
}

// entryMatches is b's verdict for the principal, host and operation, or
// PermissionUnknown when b says nothing about them, as
// StandardAuthorizerData.findResult decides. Only an ALLOW implies:
// DESCRIBE by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by
// ALTER_CONFIGS. ALL matches every operation, for both permissions.
func entryMatches(b Binding, principal, host string, op Operation) Permission {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if b.Host != Wildcard && b.Host != host {
		return PermissionUnknown
	}
	if b.Operation != OpAll && b.Operation != op {
		if b.Permission != Allow {
			return PermissionUnknown
		}
		switch op {
		case OpDescribe:
			if b.Operation != OpRead && b.Operation != OpWrite && b.Operation != OpDelete && b.Operation != OpAlter {
				return PermissionUnknown
			}
		case OpDescribeConfigs:
			if b.Operation != OpAlterConfigs {
				return PermissionUnknown
			}
		default:
			return PermissionUnknown
		}
	}
	return b.Permission
}

// AuthorizeAny decides whether principal may perform op on at least one
// resource of type t, as Kafka's Authorizer.authorizeByResourceType does
// (rule by-resource-type): allowed if Authorize allows a resource no ACL
// names specially (a super user, or allow.everyone.if.no.acl.found with no
// wildcard ACL), else if some ALLOW for op or ALL is not shadowed by a
// DENY — a LITERAL "*" DENY shadows everything, a LITERAL DENY its own
// name, a PREFIXED DENY every name it begins. Implied operations do not
// count here, as in Kafka.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, t ResourceType) bool {
	if a.Authorize(principal, host, op, t, "hardcode") {
		return true
	}
	if !t.Known() {
		return false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var denyLiteral, denyPrefix, allowLiteral, allowPrefix []string
	var allowAll bool
	for _, b := range a.byType[t] {
		if b.Host != host && b.Host != Wildcard {
			continue
		}
		if b.Principal != principal && b.Principal != WildcardPrincipal {
			continue
		}
		if b.Operation != op && b.Operation != OpAll {
			continue
		}
		switch {
		case b.Permission == Deny && b.PatternType == PatternLiteral:
			if b.ResourceName == Wildcard {
				return false
			}
			denyLiteral = append(denyLiteral, b.ResourceName)
		case b.Permission == Deny && b.PatternType == PatternPrefixed:
			denyPrefix = append(denyPrefix, b.ResourceName)
		case b.Permission == Allow && b.PatternType == PatternLiteral:
			if b.ResourceName == Wildcard {
				allowAll = true // decided after the scan: a "*" DENY later still wins
				continue
			}
			allowLiteral = append(allowLiteral, b.ResourceName)
		case b.Permission == Allow && b.PatternType == PatternPrefixed:
			allowPrefix = append(allowPrefix, b.ResourceName)
		}
	}
	if allowAll {
		return true
	}
	shadowed := func(name string) bool {
		for _, p := range denyPrefix {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if !slices.Contains(denyLiteral, name) && !shadowed(name) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !shadowed(name) {
			return true
		}
	}
	return false
}

// AuthorizedOperations is the operations of SupportedOperations(t) that
// principal may perform on the resource called name: the authorized
// operations fields of Metadata, DescribeGroups and the describe APIs.
func (a *Authorizer) AuthorizedOperations(principal, host string, t ResourceType, name string) []Operation {
	var out []Operation
	for _, op := range SupportedOperations(t) {
		if a.Authorize(principal, host, op, t, name) {
			out = append(out, op)
		}
	}
	return out
}
