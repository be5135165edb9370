package broker

// DescribeUserScramCredentials (key 50), v0 (all kmsg knows).
//
//   - Answers as Kafka's ScramImage.describe: no user named (null or
//     empty) lists every user with a SCRAM credential; a user named twice
//     is one DUPLICATE_RESOURCE result; a user without a credential is
//     RESOURCE_NOT_FOUND. Each credential reports its mechanism and
//     iterations, never salt or keys (sasl-secrets).
//   - Results are sorted by user, mechanisms by number (Kafka's follow
//     hash maps).
//   - Authorization (docs/security.md api-authorization): DESCRIBE on
//     CLUSTER, else CLUSTER_AUTHORIZATION_FAILED with Kafka's message at
//     the top level and for each user asked for.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
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
	described := b.creds.describeSCRAM()
	var users []string
	dup := make(map[string]bool)
	if len(req.Users) == 0 {
		users = slices.Sorted(maps.Keys(described))
	} else {
		for _, u := range req.Users {
			if _, seen := dup[u.Name]; seen {
				dup[u.Name] = true
				continue
			}
			dup[u.Name] = false
			users = append(users, u.Name)
		}
		slices.Sort(users)
	}
	for _, name := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		switch infos := described[name]; {
		case dup[name]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		case len(infos) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		default:
			for _, in := range infos {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = int8(in.mech), in.iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
