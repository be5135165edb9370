package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"errors"
	"fmt"

	"github.com/sharebroker/sharebroker/internal/refusal"
)

// ErrCredentialConflict: a SCRAM user given at start has a credential of
// that mechanism already, made from another password or with other
// iterations (docs/seeding.md seed-conflict).
var ErrCredentialConflict = errors.New("SCRAM credential differs from the one kept")

// EnsureSCRAM is a SCRAM user given at start (docs/seeding.md), as
// kafka-storage format --add-scram gives one: mechanism by its name
// (SCRAM-SHA-256, SCRAM-SHA-512), the password salted here with a random
// salt, iterations 4096 when 0. It is checked as AlterSCRAM checks an
// upsertion (the name, the mechanism, the iteration bounds), and a
// password must not be empty. Without a credential of that mechanism the
// user gets one; with one made from the same password and iterations
// nothing changes (seed-idempotent: the salt kept is used to check the
// password), and with any other it is ErrCredentialConflict
// (seed-conflict). With validateOnly nothing is made.
func (c *Credentials) EnsureSCRAM(name, mechanism, password string, iterations int32, validateOnly bool) (created bool, err error) {
	m, ok := scramMechanismByName(mechanism)
	if !ok {
		return false, refusal.New(ErrUnsupportedMechanism, fmt.Sprintf("Unknown SCRAM mechanism %q: want %s or %s", mechanism, MechSCRAM256, MechSCRAM512))
	}
	if err := checkSCRAMName(name, m); err != nil {
		return false, err
	}
	if iterations == 0 {
		iterations = scramDefaultIterations
	}
	switch {
	case iterations < scramMinIterations:
		return false, refusal.New(ErrUnacceptableCredential, "Too few iterations")
	case iterations > scramMaxIterations:
		return false, refusal.New(ErrUnacceptableCredential, "Too many iterations")
	case password == "":
		return false, refusal.New(ErrUnacceptableCredential, "Password must not be empty")
	}
	if have, ok := c.LookupSCRAM(name, m); ok {
		same, err := have.madeFrom(m, password, iterations)
		if err != nil {
			return false, err
		}
		if !same {
			return false, fmt.Errorf("%w: user %s has a %s credential with another password or other iterations (%d)", ErrCredentialConflict, name, mechanism, have.Iterations)
		}
		return false, nil
	}
	if validateOnly {
		return false, nil
	}
	cred, err := passwordSCRAMCredential(m, password, iterations)
	if err != nil {
		return false, err
	}
	c.SetSCRAM(name, m, cred)
	return true, nil
}

// madeFrom reports whether cred is what password salted with cred's own
// salt and iterations gives, and iterations are cred's.
func (cred SCRAMCredential) madeFrom(m SCRAMMechanism, password string, iterations int32) (bool, error) {
	if cred.Iterations != iterations {
		return false, nil
	}
	h := m.hash()
	salted, err := pbkdf2.Key(h, password, cred.Salt, int(iterations), h().Size())
	if err != nil {
		return false, err
	}
	derived := newSCRAMCredential(m, cred.Salt, salted, iterations)
	return hmac.Equal(derived.StoredKey, cred.StoredKey) && hmac.Equal(derived.ServerKey, cred.ServerKey), nil
}
