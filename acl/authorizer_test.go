package acl_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/layering"
)

// The package sees no kmsg and no sockets (docs/design.md): the standard
// library only.
func TestImportsStayInside(t *testing.T) {
	layering.CheckImports(t)
}

const (
	alice = "User:alice"
	bob   = "User:bob"
	host  = "10.0.0.1"
)

func allow(t acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: t, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: acl.Allow}
}

func deny(t acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	b := allow(t, name, pt, principal, op)
	b.Permission = acl.Deny
	return b
}

func mustCreate(t *testing.T, a *acl.Authorizer, bs ...acl.Binding) {
	t.Helper()
	for i, err := range a.Create(bs) {
		if err != nil {
			t.Fatalf("create %v: %v", bs[i], err)
		}
	}
}

func TestAuthorize(t *testing.T) {
	type check struct {
		principal, host string
		op              acl.Operation
		rt              acl.ResourceType
		name            string
		want            bool
	}
	topic := acl.ResourceTopic
	cases := []struct {
		name   string
		cfg    acl.Config
		acls   []acl.Binding
		checks []check
	}{
		{
			name: "no ACL denies by default (rule no-acl-default)",
			checks: []check{
				{alice, host, acl.OpRead, topic, "t", false},
			},
		},
		{
			name: "no ACL on the resource allows with allow.everyone.if.no.acl.found (rule no-acl-default)",
			cfg:  acl.Config{AllowIfNoACL: true},
			acls: []acl.Binding{allow(topic, "other", acl.PatternLiteral, bob, acl.OpRead)},
			checks: []check{
				{alice, host, acl.OpRead, topic, "t", true},
				// An ACL for someone else on the resource takes the default away.
				{alice, host, acl.OpRead, topic, "other", false},
				{bob, host, acl.OpRead, topic, "other", true},
			},
		},
		{
			name: "literal allow (rule literal-match)",
			acls: []acl.Binding{allow(topic, "t", acl.PatternLiteral, alice, acl.OpRead)},
			checks: []check{
				{alice, host, acl.OpRead, topic, "t", true},
				{alice, host, acl.OpRead, topic, "t2", false},
				{alice, host, acl.OpWrite, topic, "t", false},
				{bob, host, acl.OpRead, topic, "t", false},
				{alice, host, acl.OpRead, acl.ResourceGroup, "t", false},
			},
		},
		{
			name: "implied operations, ALLOW only (rule implied-operations)",
			acls: []acl.Binding{
				allow(topic, "w", acl.PatternLiteral, alice, acl.OpWrite),
				allow(topic, "ac", acl.PatternLiteral, alice, acl.OpAlterConfigs),
				allow(topic, "x", acl.PatternLiteral, alice, acl.OpAll),
				allow(topic, "d", acl.PatternLiteral, alice, acl.OpAll),
				deny(topic, "d", acl.PatternLiteral, alice, acl.OpRead),
			},
			checks: []check{
				{alice, host, acl.OpDescribe, topic, "w", true},
				{alice, host, acl.OpRead, topic, "w", false},
				{alice, host, acl.OpDescribeConfigs, topic, "ac", true},
				{alice, host, acl.OpDescribe, topic, "ac", false},
				{alice, host, acl.OpDelete, topic, "x", true},
				// A DENY of READ does not deny DESCRIBE.
				{alice, host, acl.OpDescribe, topic, "d", true},
				{alice, host, acl.OpRead, topic, "d", false},
			},
		},
		{
			name: "deny wins (rule deny-wins)",
			acls: []acl.Binding{
				allow(topic, "*", acl.PatternLiteral, alice, acl.OpRead),
				deny(topic, "secret", acl.PatternPrefixed, alice, acl.OpRead),
				deny(topic, "all-denied", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpAll),
			},
			checks: []check{
				{alice, host, acl.OpRead, topic, "public", true},
				{alice, host, acl.OpRead, topic, "secret-1", false},
				{alice, host, acl.OpRead, topic, "all-denied", false},
			},
		},
		{
			name: "prefixed and wildcard names (rules prefixed-match, wildcard-match)",
			acls: []acl.Binding{
				allow(topic, "orders.", acl.PatternPrefixed, alice, acl.OpWrite),
				allow(topic, "*", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpDescribe),
				// A PREFIXED "*" is a prefix of names starting with "*" only.
				allow(topic, "*", acl.PatternPrefixed, bob, acl.OpWrite),
				// A LITERAL name that is a prefix of the resource does not apply.
				allow(topic, "pay", acl.PatternLiteral, alice, acl.OpRead),
			},
			checks: []check{
				{alice, host, acl.OpWrite, topic, "orders.eu", true},
				{alice, host, acl.OpWrite, topic, "orders", false},
				{bob, host, acl.OpDescribe, topic, "anything", true},
				{bob, host, acl.OpWrite, topic, "anything", false},
				{bob, host, acl.OpWrite, topic, "*x", true},
				{alice, host, acl.OpRead, topic, "payments", false},
			},
		},
		{
			name: "host (rule acl-host)",
			acls: []acl.Binding{{ResourceType: topic, ResourceName: "t", PatternType: acl.PatternLiteral,
				Principal: alice, Host: host, Operation: acl.OpRead, Permission: acl.Allow}},
			checks: []check{
				{alice, host, acl.OpRead, topic, "t", true},
				{alice, "10.0.0.2", acl.OpRead, topic, "t", false},
			},
		},
		{
			name: "super users pass every DENY (rule super-users)",
			cfg:  acl.Config{SuperUsers: acl.ParseSuperUsers(" User:admin ;; User:ops ")},
			acls: []acl.Binding{deny(topic, "*", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpAll)},
			checks: []check{
				{"User:admin", host, acl.OpRead, topic, "t", true},
				{"User:ops", host, acl.OpAlter, acl.ResourceCluster, acl.ClusterName, true},
				{alice, host, acl.OpRead, topic, "t", false},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := acl.New(tc.cfg)
			mustCreate(t, a, tc.acls...)
			for _, c := range tc.checks {
				if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("%s from %s %s on %s %q: %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

// Rule by-resource-type.
func TestAuthorizeAny(t *testing.T) {
	topic := acl.ResourceTopic
	cases := []struct {
		name string
		cfg  acl.Config
		acls []acl.Binding
		want bool
	}{
		{"nothing", acl.Config{}, nil, false},
		{"no ACL, allow everyone", acl.Config{AllowIfNoACL: true}, nil, true},
		{"super user", acl.Config{SuperUsers: []string{alice}}, []acl.Binding{deny(topic, "*", acl.PatternLiteral, alice, acl.OpWrite)}, true},
		{"one literal", acl.Config{}, []acl.Binding{allow(topic, "t", acl.PatternLiteral, alice, acl.OpWrite)}, true},
		{"implied does not count", acl.Config{}, []acl.Binding{allow(topic, "t", acl.PatternLiteral, alice, acl.OpAll)}, true},
		{"other operation", acl.Config{}, []acl.Binding{allow(topic, "t", acl.PatternLiteral, alice, acl.OpRead)}, false},
		{"literal shadowed by literal deny", acl.Config{}, []acl.Binding{
			allow(topic, "t", acl.PatternLiteral, alice, acl.OpWrite), deny(topic, "t", acl.PatternLiteral, alice, acl.OpWrite)}, false},
		{"prefix shadowed by shorter prefix deny", acl.Config{}, []acl.Binding{
			allow(topic, "abc", acl.PatternPrefixed, alice, acl.OpWrite), deny(topic, "ab", acl.PatternPrefixed, alice, acl.OpWrite)}, false},
		{"prefix not shadowed by longer prefix deny", acl.Config{}, []acl.Binding{
			allow(topic, "ab", acl.PatternPrefixed, alice, acl.OpWrite), deny(topic, "abc", acl.PatternPrefixed, alice, acl.OpWrite)}, true},
		{"wildcard allow beaten by wildcard deny listed after it", acl.Config{}, []acl.Binding{
			allow(topic, "*", acl.PatternLiteral, alice, acl.OpWrite), deny(topic, "*", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpWrite)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := acl.New(tc.cfg)
			mustCreate(t, a, tc.acls...)
			if got := a.AuthorizeAny(alice, host, acl.OpWrite, topic); got != tc.want {
				t.Fatalf("AuthorizeAny: %v, want %v", got, tc.want)
			}
		})
	}
}

// Rule acl-validation.
func TestValidate(t *testing.T) {
	ok := allow(acl.ResourceTopic, "t", acl.PatternLiteral, alice, acl.OpRead)
	cases := []struct {
		name   string
		change func(*acl.Binding)
		msg    string
	}{
		{"cluster name", func(b *acl.Binding) { b.ResourceType = acl.ResourceCluster }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{"empty name", func(b *acl.Binding) { b.ResourceName = "" }, "Invalid empty resource name"},
		{"ANY resource", func(b *acl.Binding) { b.ResourceType = acl.ResourceAny }, "Invalid resourceType ANY"},
		{"MATCH pattern", func(b *acl.Binding) { b.PatternType = acl.PatternMatch }, "Invalid patternType MATCH"},
		{"ANY operation", func(b *acl.Binding) { b.Operation = acl.OpAny }, "Invalid operation ANY"},
		{"ANY permission", func(b *acl.Binding) { b.Permission = acl.PermissionAny }, "Invalid permissionType ANY"},
		{"principal without a colon", func(b *acl.Binding) { b.Principal = "alice" }, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
	}
	if err := acl.Validate(ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		b := ok
		tc.change(&b)
		err := acl.Validate(b)
		if !errors.Is(err, acl.ErrInvalid) || err.Error() != tc.msg {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
}

// Rules acl-set, acl-filters.
func TestCreateDescribeDelete(t *testing.T) {
	a := acl.New(acl.Config{})
	lit := allow(acl.ResourceTopic, "orders", acl.PatternLiteral, alice, acl.OpRead)
	pre := allow(acl.ResourceTopic, "ord", acl.PatternPrefixed, bob, acl.OpWrite)
	wild := deny(acl.ResourceTopic, "*", acl.PatternLiteral, acl.WildcardPrincipal, acl.OpDelete)
	grp := allow(acl.ResourceGroup, "orders", acl.PatternLiteral, alice, acl.OpRead)
	mustCreate(t, a, lit, pre, wild, grp, lit) // the second lit is no second copy
	if got := a.List(); !slices.Equal(got, []acl.Binding{lit, pre, wild, grp}) {
		t.Fatalf("list %v", got)
	}
	name := func(s string) *string { return &s }
	any := acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	cases := []struct {
		name string
		f    func(acl.Filter) acl.Filter
		want []acl.Binding
	}{
		{"any", func(f acl.Filter) acl.Filter { return f }, []acl.Binding{lit, pre, wild, grp}},
		{"topic", func(f acl.Filter) acl.Filter { f.ResourceType = acl.ResourceTopic; return f }, []acl.Binding{lit, pre, wild}},
		{"name, any pattern: exact names", func(f acl.Filter) acl.Filter { f.ResourceName = name("orders"); return f }, []acl.Binding{lit, grp}},
		{"name, MATCH: what applies", func(f acl.Filter) acl.Filter {
			f.ResourceType, f.ResourceName, f.PatternType = acl.ResourceTopic, name("orders"), acl.PatternMatch
			return f
		}, []acl.Binding{lit, pre, wild}},
		{"prefixed", func(f acl.Filter) acl.Filter { f.PatternType = acl.PatternPrefixed; return f }, []acl.Binding{pre}},
		{"principal exact, no wildcard expansion", func(f acl.Filter) acl.Filter { f.Principal = name(alice); return f }, []acl.Binding{lit, grp}},
		{"deny", func(f acl.Filter) acl.Filter { f.Permission = acl.Deny; return f }, []acl.Binding{wild}},
		{"host", func(f acl.Filter) acl.Filter { f.Host = name("10.0.0.9"); return f }, nil},
	}
	for _, tc := range cases {
		if got := a.Describe(tc.f(any)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Two filters selecting one binding both report it; it is gone once.
	byAlice := any
	byAlice.Principal = name(alice)
	groups := any
	groups.ResourceType = acl.ResourceGroup
	got := a.Delete([]acl.Filter{byAlice, groups})
	if !slices.Equal(got[0], []acl.Binding{lit, grp}) || !slices.Equal(got[1], []acl.Binding{grp}) {
		t.Fatalf("deleted %v", got)
	}
	if left := a.List(); !slices.Equal(left, []acl.Binding{pre, wild}) {
		t.Fatalf("left %v", left)
	}
	if a.Authorize(alice, host, acl.OpRead, acl.ResourceTopic, "orders") {
		t.Fatal("a deleted ALLOW still allows")
	}
}

func TestOperationsBits(t *testing.T) {
	// Kafka's Utils.to32BitField: bit n for code n (READ 3, WRITE 4).
	if got := acl.OperationsBits([]acl.Operation{acl.OpRead, acl.OpWrite}); got != 1<<3|1<<4 {
		t.Fatalf("bits %b", got)
	}
}

// The journal hears exactly the changes made, in order; Restore adds
// without telling it and keeps the order given.
func TestJournalAndRestore(t *testing.T) {
	a := acl.New(acl.Config{})
	read := allow(acl.ResourceTopic, "orders", acl.PatternLiteral, alice, acl.OpRead)
	write := allow(acl.ResourceTopic, "orders", acl.PatternLiteral, alice, acl.OpWrite)
	kept := deny(acl.ResourceGroup, "g", acl.PatternPrefixed, bob, acl.OpRead)
	a.Restore([]acl.Binding{kept, kept, {ResourceType: acl.ResourceTopic}})
	var heard []string
	a.SetJournal(func(created, deleted []acl.Binding) {
		for _, b := range created {
			heard = append(heard, "+"+b.Operation.String())
		}
		for _, b := range deleted {
			heard = append(heard, "-"+b.Operation.String())
		}
	})
	mustCreate(t, a, read, read, write)
	mustCreate(t, a, read) // held already: no change
	name := "orders"
	a.Delete([]acl.Filter{{ResourceType: acl.ResourceAny, ResourceName: &name, PatternType: acl.PatternAny,
		Operation: acl.OpRead, Permission: acl.PermissionAny}})
	if want := []string{"+READ", "+WRITE", "-READ"}; !slices.Equal(heard, want) {
		t.Fatalf("journal heard %v, want %v", heard, want)
	}
	if got, want := a.List(), []acl.Binding{kept, write}; !slices.Equal(got, want) {
		t.Fatalf("ACLs %v, want %v", got, want)
	}
}
