package auth

// The rules of the SCRAM credential APIs (docs/security.md, scram-admin
// and sasl-secrets), as Kafka's ScramImage.describe and
// ScramControlManager.alterCredentials apply them. The broker translates
// the requests to these types and the errors to codes.

import (
	"errors"
	"maps"
	"slices"

	"github.com/sharebroker/sharebroker/internal/refusal"
)

// Sentinels of the SCRAM credential APIs; each names one Kafka error
// code. The errors returned wrap one and read as Kafka's message.
var (
	// ErrDuplicateUser: a user named twice in one request
	// (DUPLICATE_RESOURCE).
	ErrDuplicateUser = errors.New("user named twice")
	// ErrNoCredential: the user has no such credential
	// (RESOURCE_NOT_FOUND).
	ErrNoCredential = errors.New("no such credential")
	// ErrUnacceptableCredential: an empty name or iterations out of
	// bounds (UNACCEPTABLE_CREDENTIAL).
	ErrUnacceptableCredential = errors.New("unacceptable credential")
	// ErrUnsupportedMechanism: a SCRAM mechanism other than 1 or 2
	// (UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedMechanism = errors.New("unsupported SCRAM mechanism")
)

// errEmptyKey is an upsertion without a salted password: Java's HMAC
// refuses an empty key, which Kafka's finishUpsertion turns into an
// unexpected error (UNKNOWN_SERVER_ERROR); no sentinel names it.
var errEmptyKey error = refusal.New(nil, "Empty key")

// SCRAMInfo is what DescribeUserScramCredentials may tell of a credential:
// never its salt or keys (sasl-secrets).
type SCRAMInfo struct {
	Mechanism  SCRAMMechanism
	Iterations int32
}

// UserSCRAM is one user's answer to DescribeUserScramCredentials: its
// credentials, mechanisms in order, or Err.
type UserSCRAM struct {
	User  string
	Infos []SCRAMInfo
	Err   error
}

// DescribeSCRAM answers DescribeUserScramCredentials as Kafka's
// ScramImage.describe: no user named lists every user with a SCRAM
// credential; a user named twice is one ErrDuplicateUser; a user without
// a credential is ErrNoCredential. Users come sorted.
func (c *Credentials) DescribeSCRAM(users []string) []UserSCRAM {
	c.mu.Lock()
	described := make(map[string][]SCRAMInfo, len(c.scram))
	for name, byMech := range c.scram {
		for _, m := range []SCRAMMechanism{SCRAMSHA256, SCRAMSHA512} {
			if cred, ok := byMech[m]; ok {
				described[name] = append(described[name], SCRAMInfo{m, cred.Iterations})
			}
		}
	}
	c.mu.Unlock()
	var names []string
	dup := make(map[string]bool)
	if len(users) == 0 {
		names = slices.Sorted(maps.Keys(described))
	} else {
		for _, u := range users {
			if _, seen := dup[u]; seen {
				dup[u] = true
				continue
			}
			dup[u] = false
			names = append(names, u)
		}
		slices.Sort(names)
	}
	out := make([]UserSCRAM, 0, len(names))
	for _, name := range names {
		res := UserSCRAM{User: name}
		switch infos := described[name]; {
		case dup[name]:
			res.Err = refusal.New(ErrDuplicateUser, "Cannot describe SCRAM credentials for the same user twice in a single request: "+name)
		case len(infos) == 0:
			res.Err = refusal.New(ErrNoCredential, "Attempt to describe a user credential that does not exist: "+name)
		default:
			res.Infos = infos
		}
		out = append(out, res)
	}
	return out
}

// SCRAMDeletion removes a user's credential of one mechanism.
type SCRAMDeletion struct {
	User      string
	Mechanism SCRAMMechanism
}

// SCRAMUpsertion creates or replaces a user's credential of one
// mechanism from a password the client salted.
type SCRAMUpsertion struct {
	User                 string
	Mechanism            SCRAMMechanism
	Iterations           int32
	Salt, SaltedPassword []byte
}

// AlterResult is one user's outcome of AlterUserScramCredentials: Err nil
// when its change was made.
type AlterResult struct {
	User string
	Err  error
}

// AlterSCRAM applies AlterUserScramCredentials as Kafka's
// ScramControlManager.alterCredentials: every entry is validated before
// any change, and the changes are made under one lock. A user named twice
// across deletions and upsertions is ErrDuplicateUser and none of its
// entries applies; an empty name or iterations outside 4096–16384 is
// ErrUnacceptableCredential; a mechanism other than 1 or 2 is
// ErrUnsupportedMechanism; deleting a credential that does not exist is
// ErrNoCredential. An upsertion keeps the stored and server keys derived
// from the salted password, never the salted password. Results are
// deletions, then upsertions, then errors, each in request order (Kafka's
// follow hash maps).
func (c *Credentials) AlterSCRAM(deletions []SCRAMDeletion, upsertions []SCRAMUpsertion) []AlterResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dels []SCRAMDeletion
	var ups []SCRAMUpsertion
	errs := make(map[string]error)
	var errOrder []string
	fail := func(name string, err error) {
		if _, ok := errs[name]; !ok {
			errOrder = append(errOrder, name)
		}
		errs[name] = err
	}
	dupErr := refusal.New(ErrDuplicateUser, "A user credential cannot be altered twice in the same request")
	removeDeletion := func(name string) bool {
		for i, d := range dels {
			if d.User == name {
				dels = append(dels[:i], dels[i+1:]...)
				return true
			}
		}
		return false
	}
	removeUpsert := func(name string) bool {
		for i, u := range ups {
			if u.User == name {
				ups = append(ups[:i], ups[i+1:]...)
				return true
			}
		}
		return false
	}
	for _, d := range deletions {
		if _, failed := errs[d.User]; failed {
			continue
		}
		if removeDeletion(d.User) {
			fail(d.User, dupErr)
			continue
		}
		if err := checkSCRAMName(d.User, d.Mechanism); err != nil {
			fail(d.User, err)
			continue
		}
		if _, ok := c.scram[d.User][d.Mechanism]; !ok {
			fail(d.User, refusal.New(ErrNoCredential, "Attempt to delete a user credential that does not exist"))
			continue
		}
		dels = append(dels, d)
	}
	for _, u := range upsertions {
		if _, failed := errs[u.User]; failed {
			continue
		}
		if removeDeletion(u.User) || removeUpsert(u.User) {
			fail(u.User, dupErr)
			continue
		}
		if err := checkSCRAMName(u.User, u.Mechanism); err != nil {
			fail(u.User, err)
			continue
		}
		switch {
		case u.Iterations < scramMinIterations:
			fail(u.User, refusal.New(ErrUnacceptableCredential, "Too few iterations"))
			continue
		case u.Iterations > scramMaxIterations:
			fail(u.User, refusal.New(ErrUnacceptableCredential, "Too many iterations"))
			continue
		case len(u.SaltedPassword) == 0:
			fail(u.User, errEmptyKey)
			continue
		}
		ups = append(ups, u)
	}
	out := make([]AlterResult, 0, len(dels)+len(ups)+len(errOrder))
	for _, d := range dels {
		c.deleteLocked(d.User, d.Mechanism)
		out = append(out, AlterResult{User: d.User})
	}
	for _, u := range ups {
		c.setLocked(u.User, u.Mechanism, newSCRAMCredential(u.Mechanism, u.Salt, u.SaltedPassword, u.Iterations))
		out = append(out, AlterResult{User: u.User})
	}
	for _, name := range errOrder {
		out = append(out, AlterResult{User: name, Err: errs[name]})
	}
	return out
}

// checkSCRAMName is Kafka's validateScramUsernameAndMechanism.
func checkSCRAMName(name string, m SCRAMMechanism) error {
	switch {
	case name == "":
		return refusal.New(ErrUnacceptableCredential, "Username must not be empty")
	case !m.Valid():
		return refusal.New(ErrUnsupportedMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}
