package broker

// DeleteAcls (key 31), v0-v3, as Kafka's AclApis.handleDeleteAcls and the
// controller's AclControlManager.deleteAcls answer it (docs/security.md,
// ACLs).
//
//   - The principal needs ALTER on CLUSTER, else every filter answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - Without an authorizer every filter answers SECURITY_DISABLED, "No
//     Authorizer is configured." (rule acl-off).
//   - A filter field with the UNKNOWN code (0) closes the connection (rule
//     acl-unknown-closes). A code Kafka does not know reads as UNKNOWN
//     there and the controller refuses that one filter: INVALID_REQUEST,
//     "Unknown patternFilter." or "Unknown entryFilter.".
//   - Each filter lists the ACLs it removed, each with error code 0;
//     filters are matched against the ACLs as they were before the
//     request (rule acl-filters).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/refusal"
)

func init() { register(31, 0, 3, handleDeleteACLs) }

func handleDeleteACLs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for i := range req.Filters {
		f := &req.Filters[i]
		if anyUnknown(int8(f.ResourceType), int8(f.ResourcePatternType), int8(f.Operation), int8(f.PermissionType)) {
			return nil, errUnknownACLField
		}
	}
	var err error
	switch {
	case !r.authorizedCluster(acl.OpAlter):
		err = r.clusterDenied()
	case b.authz == nil:
		err = refusal.New(errSecurityDisabled, "No Authorizer is configured.")
	}
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = codeFor(err), errMessage(err)
	}
	if err != nil {
		return resp, nil
	}
	// Filters the controller refuses stay out of the deletion; the others
	// are applied together.
	var filters []acl.Filter
	var at []int
	for i := range req.Filters {
		rf := &req.Filters[i]
		f := filterOf(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		var bad error
		switch {
		case !f.ResourceType.Known() || !f.PatternType.Known():
			bad = refusal.New(errInvalidRequest, "Unknown patternFilter.")
		case !f.Operation.Known() || !f.Permission.Known():
			bad = refusal.New(errInvalidRequest, "Unknown entryFilter.")
		}
		if bad != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = codeFor(bad), errMessage(bad)
			continue
		}
		filters = append(filters, f)
		at = append(at, i)
	}
	for j, deleted := range b.authz.Delete(filters) {
		res := &resp.Results[at[j]]
		for _, a := range deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host = a.Principal, a.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
	}
	return resp, nil
}
