package broker

// CreateAcls (key 30), v0-v3, as Kafka's AclApis.handleCreateAcls and the
// controller's AclControlManager answer it (docs/security.md, ACLs).
//
//   - The principal needs ALTER on CLUSTER, checked first, even with
//     authorization off (where it always passes); without it every
//     creation answers CLUSTER_AUTHORIZATION_FAILED.
//   - Without an authorizer every creation answers SECURITY_DISABLED, "No
//     Authorizer is configured." (rule acl-off).
//   - A field with the UNKNOWN code (0) closes the connection, as Kafka's
//     request parser refuses it (rule acl-unknown-closes).
//   - Otherwise each creation succeeds or answers INVALID_REQUEST with
//     Kafka's message (acl.Validate, rule acl-validation); a creation that
//     exists already succeeds (rule acl-set). Valid ones are kept even
//     when another in the request is refused.
//   - v0 carries no pattern type: LITERAL, the field's default.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/internal/refusal"
)

func init() { register(30, 0, 3, handleCreateACLs) }

func handleCreateACLs(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for i := range req.Creations {
		c := &req.Creations[i]
		if anyUnknown(int8(c.ResourceType), int8(c.ResourcePatternType), int8(c.Operation), int8(c.PermissionType)) {
			return nil, errUnknownACLField
		}
	}
	all := func(err error) kmsg.Response {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = codeFor(err), errMessage(err)
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	if !r.authorizedCluster(acl.OpAlter) {
		return all(r.clusterDenied()), nil
	}
	if b.authz == nil {
		return all(refusal.New(errSecurityDisabled, "No Authorizer is configured.")), nil
	}
	bindings := make([]acl.Binding, len(req.Creations))
	for i := range req.Creations {
		bindings[i] = bindingOf(&req.Creations[i])
	}
	for _, err := range b.authz.Create(bindings) {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = codeFor(err), errMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
