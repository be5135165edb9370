package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/refusal"
)

// What CreateAcls, DescribeAcls and DeleteAcls share: turning their kmsg
// fields into the acl package's types and back, and the two refusals that
// come before any ACL is looked at.

// errUnknownACLField: a creation or filter carries the UNKNOWN code (0)
// in a field. Kafka's request constructors refuse it while parsing, which
// closes the connection; so do we (rule acl-unknown-closes).
var errUnknownACLField = errors.New("an ACL field is UNKNOWN (code 0)")

// clusterDenied is the error an ACL API answers when the principal lacks
// the CLUSTER operation it needs. Kafka's message names its internal
// request object; ours names the principal and host.
func (r *request) clusterDenied() error {
	return refusal.New(errClusterAuthorization, fmt.Sprintf("Request of %s from %s is not authorized.", r.conn.principal, r.conn.clientIP()))
}

// anyUnknown reports whether any of the codes is Kafka's UNKNOWN (0).
func anyUnknown(codes ...int8) bool {
	for _, c := range codes {
		if c == 0 {
			return true
		}
	}
	return false
}

func bindingOf(c *kmsg.CreateACLsRequestCreation) acl.Binding {
	return acl.Binding{
		ResourceType: acl.ResourceType(c.ResourceType),
		ResourceName: c.ResourceName,
		PatternType:  acl.PatternType(c.ResourcePatternType),
		Principal:    c.Principal,
		Host:         c.Host,
		Operation:    acl.Operation(c.Operation),
		Permission:   acl.Permission(c.PermissionType),
	}
}

func filterOf(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	return acl.Filter{
		ResourceType: acl.ResourceType(rt),
		ResourceName: name,
		PatternType:  acl.PatternType(pt),
		Principal:    principal,
		Host:         host,
		Operation:    acl.Operation(op),
		Permission:   acl.Permission(perm),
	}
}
