package broker

// DescribeUserScramCredentials (key 50), v0 (all kmsg knows).
//
//   - Answers as Kafka's ScramImage.describe (auth.Credentials.DescribeSCRAM):
//     no user named (null or empty) lists every user with a SCRAM
//     credential; a user named twice is one DUPLICATE_RESOURCE result; a
//     user without a credential is RESOURCE_NOT_FOUND. Each credential
//     reports its mechanism and iterations, never salt or keys
//     (sasl-secrets).
//   - Results are sorted by user, mechanisms by number (Kafka's follow
//     hash maps).
//   - Authorization (docs/security.md api-authorization): DESCRIBE on
//     CLUSTER, else CLUSTER_AUTHORIZATION_FAILED with Kafka's message at
//     the top level and for each user asked for.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

func init() {
	register(50, 0, 0, handleDescribeUserSCRAMCredentials)
}

func handleDescribeUserSCRAMCredentials(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	if !r.authorizedCluster(acl.OpDescribe) {
		// DescribeUserScramCredentialsRequest.getErrorResponse: the code and
		// Kafka's message at the top level and once per user asked for,
		// the user's name left empty.
		err := errClusterAuthorization
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		for range req.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.ErrorCode, res.ErrorMessage = codeFor(err), errMessage(err)
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	var users []string // nil for none named: every user
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	for _, d := range b.authn.Credentials.DescribeSCRAM(users) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = d.User
		res.ErrorCode, res.ErrorMessage = codeFor(d.Err), errMessage(d.Err)
		for _, in := range d.Infos {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = int8(in.Mechanism), in.Iterations
			res.CredentialInfos = append(res.CredentialInfos, ci)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
