package auth

// SASL credentials (docs/security.md, "SASL"): the users of --sasl-user
// (Config.Users) can authenticate with PLAIN and both SCRAM mechanisms;
// AlterUserScramCredentials adds, replaces and removes SCRAM credentials
// at run time, as Kafka's controller does with its
// UserScramCredentialRecords. PLAIN users are fixed at start, as Kafka's
// JAAS user_NAME="password" options are.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"
	"sync"
)

// SASLUser is one user name and password, as --sasl-user NAME:PASSWORD
// gives them.
type SASLUser struct {
	Name, Password string
}

// ParseSASLUser splits NAME:PASSWORD at the first colon: a name cannot
// hold one, a password can. Neither may be empty.
func ParseSASLUser(s string) (SASLUser, error) {
	name, password, ok := strings.Cut(s, ":")
	if !ok || name == "" || password == "" {
		return SASLUser{}, errors.New("want NAME:PASSWORD with neither empty")
	}
	return SASLUser{Name: name, Password: password}, nil
}

// SASL mechanism names, as clients send them in SaslHandshake.
const (
	MechPlain    = "PLAIN"
	MechSCRAM256 = "SCRAM-SHA-256"
	MechSCRAM512 = "SCRAM-SHA-512"
	MechOAuth    = "OAUTHBEARER"
)

// PropEnabledMechanisms is Kafka's sasl.enabled.mechanisms, the list
// Config.Mechanisms holds.
const PropEnabledMechanisms = "sasl.enabled.mechanisms"

// SCRAMMechanism is a SCRAM mechanism as the SCRAM credential APIs number
// it (Kafka's ScramMechanism.type): 0 is UNKNOWN.
type SCRAMMechanism int8

const (
	SCRAMSHA256 SCRAMMechanism = 1
	SCRAMSHA512 SCRAMMechanism = 2
)

// The iteration bounds of a SCRAM credential: Kafka's minIterations of
// both mechanisms and ScramControlManager's MAX_ITERATIONS.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
	// scramDefaultIterations is what a --sasl-user credential uses, the
	// default of Kafka's kafka-configs and kafka-storage tools.
	scramDefaultIterations = 4096
)

// Valid reports whether m is a mechanism the broker serves: SCRAM-SHA-256
// or SCRAM-SHA-512.
func (m SCRAMMechanism) Valid() bool { return m == SCRAMSHA256 || m == SCRAMSHA512 }

func (m SCRAMMechanism) hash() func() hash.Hash {
	if m == SCRAMSHA512 {
		return sha512.New
	}
	return sha256.New
}

func scramMechanismByName(name string) (SCRAMMechanism, bool) {
	switch name {
	case MechSCRAM256:
		return SCRAMSHA256, true
	case MechSCRAM512:
		return SCRAMSHA512, true
	}
	return 0, false
}

// SCRAMCredential is what the broker keeps of a SCRAM password (RFC 5802):
// never the password, nor the salted password. Its fields are those of
// the data directory's durable.SCRAMCredential, in the same order, so one
// converts to the other.
type SCRAMCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// newSCRAMCredential derives the stored and server keys from a salted
// password, as Kafka's ScramFormatter does for an upsertion.
func newSCRAMCredential(m SCRAMMechanism, salt, saltedPassword []byte, iterations int32) SCRAMCredential {
	h := m.hash()
	mac := func(key []byte, msg string) []byte {
		w := hmac.New(h, key)
		w.Write([]byte(msg))
		return w.Sum(nil)
	}
	clientKey := mac(saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return SCRAMCredential{
		Salt:       slices.Clone(salt),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac(saltedPassword, "Server Key"),
	}
}

// passwordSCRAMCredential salts password with a random salt.
func passwordSCRAMCredential(m SCRAMMechanism, password string, iterations int32) (SCRAMCredential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	h := m.hash()
	salted, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		return SCRAMCredential{}, err
	}
	return newSCRAMCredential(m, salt, salted, iterations), nil
}

// Journal is told each change of a SCRAM credential, in order; a nil cred
// is a deletion. The data directory keeps them (docs/durability.md
// scram-kept).
type Journal func(name string, m SCRAMMechanism, cred *SCRAMCredential)

// Credentials are the SASL users. Their methods are safe for concurrent
// use.
type Credentials struct {
	// plain is name → password for PLAIN; fixed at start, read without
	// a lock.
	plain map[string]string
	mu    sync.Mutex // guards scram and journal
	// scram is name → mechanism → credential.
	scram map[string]map[SCRAMMechanism]SCRAMCredential
	// journal, set with a data directory after recovery, is told each
	// change under mu, so the data directory sees them in order.
	journal Journal
}

// NewCredentials makes the credentials of users: a PLAIN password and a
// credential of each SCRAM mechanism for each.
func NewCredentials(users []SASLUser) (*Credentials, error) {
	c := &Credentials{plain: make(map[string]string), scram: make(map[string]map[SCRAMMechanism]SCRAMCredential)}
	for _, u := range users {
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("sasl user %q: name and password must not be empty", u.Name)
		}
		if _, dup := c.plain[u.Name]; dup {
			return nil, fmt.Errorf("sasl user %q given twice", u.Name)
		}
		c.plain[u.Name] = u.Password
		for _, m := range []SCRAMMechanism{SCRAMSHA256, SCRAMSHA512} {
			cred, err := passwordSCRAMCredential(m, u.Password, scramDefaultIterations)
			if err != nil {
				return nil, fmt.Errorf("sasl user %q: %w", u.Name, err)
			}
			c.SetSCRAM(u.Name, m, cred)
		}
	}
	return c, nil
}

// Clone copies the credentials without their journal: salting a
// password is slow, so a test that needs the same users many times (the
// SASL fuzz target) salts them once and gives each run a copy.
func (c *Credentials) Clone() *Credentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Credentials{plain: c.plain, scram: make(map[string]map[SCRAMMechanism]SCRAMCredential, len(c.scram))}
	for name, byMech := range c.scram {
		out.scram[name] = maps.Clone(byMech)
	}
	return out
}

// checkPlain reports whether name has password for PLAIN, comparing in
// constant time.
func (c *Credentials) checkPlain(name, password string) bool {
	want, ok := c.plain[name]
	return ok && hmac.Equal([]byte(want), []byte(password))
}

// LookupSCRAM returns name's credential of mechanism m.
func (c *Credentials) LookupSCRAM(name string, m SCRAMMechanism) (SCRAMCredential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cred, ok := c.scram[name][m]
	return cred, ok
}

// SetSCRAM creates or replaces name's credential of mechanism m and tells
// the journal.
func (c *Credentials) SetSCRAM(name string, m SCRAMMechanism, cred SCRAMCredential) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(name, m, cred)
}

func (c *Credentials) setLocked(name string, m SCRAMMechanism, cred SCRAMCredential) {
	if c.scram[name] == nil {
		c.scram[name] = make(map[SCRAMMechanism]SCRAMCredential)
	}
	c.scram[name][m] = cred
	if c.journal != nil {
		c.journal(name, m, &cred)
	}
}

// DeleteSCRAM removes name's credential of mechanism m, if any, and tells
// the journal.
func (c *Credentials) DeleteSCRAM(name string, m SCRAMMechanism) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteLocked(name, m)
}

func (c *Credentials) deleteLocked(name string, m SCRAMMechanism) {
	delete(c.scram[name], m)
	if len(c.scram[name]) == 0 {
		delete(c.scram, name)
	}
	if c.journal != nil {
		c.journal(name, m, nil)
	}
}

// SetJournal has every later change told to j, in the order the changes
// are made (nil: none is told).
func (c *Credentials) SetJournal(j Journal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.journal = j
}
