package broker

// DescribeAcls (key 29), v0-v3, as Kafka's AclApis.handleDescribeAcls
// answers it (docs/security.md, ACLs).
//
//   - The principal needs DESCRIBE on CLUSTER (ALTER implies it), else
//     CLUSTER_AUTHORIZATION_FAILED at the top level.
//   - Without an authorizer: SECURITY_DISABLED, "No Authorizer is
//     configured on the broker" (rule acl-off).
//   - A filter field with the UNKNOWN code (0) closes the connection (rule
//     acl-unknown-closes).
//   - The ACLs the filter selects (rule acl-filters), grouped by resource
//     pattern. Kafka groups them in hash maps, so its order is arbitrary;
//     ours is creation order, resources by their first ACL.
//   - v0 carries no pattern type: LITERAL, the field's default.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/refusal"
)

func init() { register(29, 0, 3, handleDescribeACLs) }

func handleDescribeACLs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if anyUnknown(int8(req.ResourceType), int8(req.ResourcePatternType), int8(req.Operation), int8(req.PermissionType)) {
		return nil, errUnknownACLField
	}
	var err error
	switch {
	case !r.authorizedCluster(acl.OpDescribe):
		err = r.clusterDenied()
	case b.authz == nil:
		err = refusal.New(errSecurityDisabled, "No Authorizer is configured on the broker")
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		return resp, nil
	}
	f := filterOf(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	type pattern struct {
		t    acl.ResourceType
		name string
		pt   acl.PatternType
	}
	index := make(map[pattern]int)
	for _, a := range b.authz.Describe(f) {
		key := pattern{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := index[key]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(a.ResourceType)
			res.ResourceName = a.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			i = len(resp.Resources)
			index[key] = i
			resp.Resources = append(resp.Resources, res)
		}
		d := kmsg.NewDescribeACLsResponseResourceACL()
		d.Principal, d.Host = a.Principal, a.Host
		d.Operation, d.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, d)
	}
	return resp, nil
}
