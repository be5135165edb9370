package broker

// AlterUserScramCredentials (key 51), v0 (all kmsg knows).
//
//   - Validates as Kafka's ScramControlManager.alterCredentials
//     (auth.Credentials.AlterSCRAM), every entry before any change
//     (scram-admin): a user named twice across deletions and upsertions
//     is DUPLICATE_RESOURCE and none of its entries applies; an empty
//     name or iterations outside 4096–16384 is UNACCEPTABLE_CREDENTIAL; a
//     mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) is
//     UNSUPPORTED_SASL_MECHANISM; deleting a credential that does not
//     exist is RESOURCE_NOT_FOUND.
//   - An upsertion keeps the stored and server keys derived from the
//     salted password (the client salts), never the salted password.
//   - Results: deletions, then upsertions, then errors, each in request
//     order (Kafka's follow hash maps).
//   - Authorization (docs/security.md api-authorization): ALTER on
//     CLUSTER, else every user named answers CLUSTER_AUTHORIZATION_FAILED
//     (acl-apis-need-cluster's message), once each, sorted.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/auth"
)

func init() {
	register(51, 0, 0, handleAlterUserSCRAMCredentials)
}

// scramAlterRefused answers every user the request names, once each and
// sorted, with err, as AlterUserScramCredentialsRequest.getErrorResponse
// does.
func scramAlterRefused(req *kmsg.AlterUserSCRAMCredentialsRequest, err error) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	for _, d := range req.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range req.Upsertions {
		users = append(users, u.Name)
	}
	slices.Sort(users)
	for _, name := range slices.Compact(users) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = name, codeFor(err), errMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func handleAlterUserSCRAMCredentials(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	if !r.authorizedCluster(acl.OpAlter) {
		return scramAlterRefused(req, r.clusterDenied()), nil
	}
	var deletions []auth.SCRAMDeletion
	for _, d := range req.Deletions {
		deletions = append(deletions, auth.SCRAMDeletion{User: d.Name, Mechanism: auth.SCRAMMechanism(d.Mechanism)})
	}
	var upserts []auth.SCRAMUpsertion
	for _, u := range req.Upsertions {
		upserts = append(upserts, auth.SCRAMUpsertion{User: u.Name, Mechanism: auth.SCRAMMechanism(u.Mechanism),
			Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	for _, a := range b.authn.Credentials.AlterSCRAM(deletions, upserts) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = a.User, codeFor(a.Err), errMessage(a.Err)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
