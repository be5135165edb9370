package broker

// AlterUserScramCredentials (key 51), v0 (all kmsg knows).
//
//   - Validates as Kafka's ScramControlManager.alterCredentials, every
//     entry before any change (scram-admin): a user named twice across
//     deletions and upsertions is DUPLICATE_RESOURCE and none of its
//     entries applies; an empty name or iterations outside 4096–16384 is
//     UNACCEPTABLE_CREDENTIAL; a mechanism other than 1 (SCRAM-SHA-256) or
//     2 (SCRAM-SHA-512) is UNSUPPORTED_SASL_MECHANISM; deleting a
//     credential that does not exist is RESOURCE_NOT_FOUND.
//   - An upsertion keeps the stored and server keys derived from the
//     salted password (the client salts), never the salted password.
//   - Results: deletions, then upsertions, then errors, each in request
//     order (Kafka's follow hash maps).
//   - Authorization (docs/security.md api-authorization): ALTER on
//     CLUSTER, else every user named answers CLUSTER_AUTHORIZATION_FAILED
//     (acl-apis-need-cluster's message), once each, sorted.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

func init() {
	register(51, 0, 0, handleAlterUserSCRAMCredentials)
}

// scramAlterError is one user's refusal.
type scramAlterError struct {
	code int16
	msg  string
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
	var deletions []kmsg.AlterUserSCRAMCredentialsRequestDeletion
	var upserts []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
	errs := make(map[string]scramAlterError)
	var errOrder []string
	fail := func(name string, code int16, msg string) {
		if _, ok := errs[name]; !ok {
			errOrder = append(errOrder, name)
		}
		errs[name] = scramAlterError{code, msg}
	}
	const dupMsg = "A user credential cannot be altered twice in the same request"
	removeDeletion := func(name string) bool {
		for i, d := range deletions {
			if d.Name == name {
				deletions = append(deletions[:i], deletions[i+1:]...)
				return true
			}
		}
		return false
	}
	removeUpsert := func(name string) bool {
		for i, u := range upserts {
			if u.Name == name {
				upserts = append(upserts[:i], upserts[i+1:]...)
				return true
			}
		}
		return false
	}
	for _, d := range req.Deletions {
		if _, failed := errs[d.Name]; failed {
			continue
		}
		if removeDeletion(d.Name) {
			fail(d.Name, kerr.DuplicateResource.Code, dupMsg)
			continue
		}
		if e, bad := checkSCRAMName(d.Name, scramMechanism(d.Mechanism)); bad {
			fail(d.Name, e.code, e.msg)
			continue
		}
		if _, ok := b.creds.lookupSCRAM(d.Name, scramMechanism(d.Mechanism)); !ok {
			fail(d.Name, kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
			continue
		}
		deletions = append(deletions, d)
	}
	for _, u := range req.Upsertions {
		if _, failed := errs[u.Name]; failed {
			continue
		}
		if removeDeletion(u.Name) || removeUpsert(u.Name) {
			fail(u.Name, kerr.DuplicateResource.Code, dupMsg)
			continue
		}
		if e, bad := checkSCRAMName(u.Name, scramMechanism(u.Mechanism)); bad {
			fail(u.Name, e.code, e.msg)
			continue
		}
		switch {
		case u.Iterations < scramMinIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too few iterations")
			continue
		case u.Iterations > scramMaxIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too many iterations")
			continue
		case len(u.SaltedPassword) == 0:
			// Java's HMAC refuses an empty key, which Kafka's
			// finishUpsertion turns into this error.
			fail(u.Name, kerr.UnknownServerError.Code, "Empty key")
			continue
		}
		upserts = append(upserts, u)
	}
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	ok := func(name string) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		resp.Results = append(resp.Results, res)
	}
	for _, d := range deletions {
		b.creds.deleteSCRAM(d.Name, scramMechanism(d.Mechanism))
		ok(d.Name)
	}
	for _, u := range upserts {
		m := scramMechanism(u.Mechanism)
		b.creds.setSCRAM(u.Name, m, newSCRAMCredential(m, u.Salt, u.SaltedPassword, u.Iterations))
		ok(u.Name)
	}
	for _, name := range errOrder {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = name, errs[name].code, kmsg.StringPtr(errs[name].msg)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// checkSCRAMName is Kafka's validateScramUsernameAndMechanism.
func checkSCRAMName(name string, m scramMechanism) (scramAlterError, bool) {
	switch {
	case name == "":
		return scramAlterError{kerr.UnacceptableCredential.Code, "Username must not be empty"}, true
	case !m.valid():
		return scramAlterError{kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"}, true
	}
	return scramAlterError{}, false
}
