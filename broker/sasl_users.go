package broker

// SASL credentials (docs/security.md, "SASL"): the users of --sasl-user
// (Config.SASLUsers) can authenticate with PLAIN and both SCRAM
// mechanisms; AlterUserScramCredentials adds, replaces and removes SCRAM
// credentials at run time, as Kafka's controller does with its
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
	mechPlain     = "PLAIN"
	mechSCRAM256  = "SCRAM-SHA-256"
	mechSCRAM512  = "SCRAM-SHA-512"
	mechOAuth     = "OAUTHBEARER"
	propSASLMechs = "sasl.enabled.mechanisms"
)

// scramMechanism is a SCRAM mechanism as the SCRAM credential APIs number
// it (Kafka's ScramMechanism.type): 0 is UNKNOWN.
type scramMechanism int8

const (
	scramSHA256 scramMechanism = 1
	scramSHA512 scramMechanism = 2
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

func (m scramMechanism) valid() bool { return m == scramSHA256 || m == scramSHA512 }

func (m scramMechanism) hash() func() hash.Hash {
	if m == scramSHA512 {
		return sha512.New
	}
	return sha256.New
}

func scramMechanismByName(name string) (scramMechanism, bool) {
	switch name {
	case mechSCRAM256:
		return scramSHA256, true
	case mechSCRAM512:
		return scramSHA512, true
	}
	return 0, false
}

// scramCredential is what the broker keeps of a SCRAM password (RFC 5802):
// never the password, nor the salted password.
type scramCredential struct {
	salt                 []byte
	iterations           int32
	storedKey, serverKey []byte
}

// newSCRAMCredential derives the stored and server keys from a salted
// password, as Kafka's ScramFormatter does for an upsertion.
func newSCRAMCredential(m scramMechanism, salt, saltedPassword []byte, iterations int32) scramCredential {
	h := m.hash()
	mac := func(key []byte, msg string) []byte {
		w := hmac.New(h, key)
		w.Write([]byte(msg))
		return w.Sum(nil)
	}
	clientKey := mac(saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return scramCredential{
		salt:       slices.Clone(salt),
		iterations: iterations,
		storedKey:  stored.Sum(nil),
		serverKey:  mac(saltedPassword, "Server Key"),
	}
}

// passwordSCRAMCredential salts password with a random salt.
func passwordSCRAMCredential(m scramMechanism, password string, iterations int32) (scramCredential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	h := m.hash()
	salted, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		return scramCredential{}, err
	}
	return newSCRAMCredential(m, salt, salted, iterations), nil
}

// credentials are the broker's SASL users.
type credentials struct {
	// plain is name → password for PLAIN; fixed at start, read without
	// a lock.
	plain map[string]string
	mu    sync.Mutex // guards scram and journal
	// scram is name → mechanism → credential.
	scram map[string]map[scramMechanism]scramCredential
	// journal, set with a data directory after recovery, is told each
	// change under mu, so the data directory sees them in order; nil cred
	// is a deletion (docs/durability.md scram-kept).
	journal func(name string, m scramMechanism, cred *scramCredential)
}

func newCredentials(users []SASLUser) (*credentials, error) {
	c := &credentials{plain: make(map[string]string), scram: make(map[string]map[scramMechanism]scramCredential)}
	for _, u := range users {
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("sasl user %q: name and password must not be empty", u.Name)
		}
		if _, dup := c.plain[u.Name]; dup {
			return nil, fmt.Errorf("sasl user %q given twice", u.Name)
		}
		c.plain[u.Name] = u.Password
		for _, m := range []scramMechanism{scramSHA256, scramSHA512} {
			cred, err := passwordSCRAMCredential(m, u.Password, scramDefaultIterations)
			if err != nil {
				return nil, fmt.Errorf("sasl user %q: %w", u.Name, err)
			}
			c.setSCRAM(u.Name, m, cred)
		}
	}
	return c, nil
}

// checkPlain reports whether name has password for PLAIN, comparing in
// constant time.
func (c *credentials) checkPlain(name, password string) bool {
	want, ok := c.plain[name]
	return ok && hmac.Equal([]byte(want), []byte(password))
}

func (c *credentials) lookupSCRAM(name string, m scramMechanism) (scramCredential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cred, ok := c.scram[name][m]
	return cred, ok
}

func (c *credentials) setSCRAM(name string, m scramMechanism, cred scramCredential) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scram[name] == nil {
		c.scram[name] = make(map[scramMechanism]scramCredential)
	}
	c.scram[name][m] = cred
	if c.journal != nil {
		c.journal(name, m, &cred)
	}
}

// setUpSASL makes the credentials and checks that a SASL listener can be
// got into (sasl-needs-a-way-in).
func (b *Broker) setUpSASL() error {
	var err error
	if b.creds, err = newCredentials(b.cfg.SASLUsers); err != nil {
		return err
	}
	b.saslMechanisms = splitList(b.cfg.props[propSASLMechs])
	allSASL := !slices.ContainsFunc(b.cfg.Listeners, func(l ListenerConfig) bool { return !usesSASL(l.Protocol) })
	if allSASL && len(b.cfg.SASLUsers) == 0 && !b.mechanismEnabled(mechOAuth) {
		return fmt.Errorf("every listener is SASL but no client could authenticate: give a user (--sasl-user NAME:PASSWORD) or add %s to %s", mechOAuth, propSASLMechs)
	}
	return nil
}

// mechanismEnabled reports whether mech is in sasl.enabled.mechanisms.
func (b *Broker) mechanismEnabled(mech string) bool { return slices.Contains(b.saslMechanisms, mech) }

// hasSASLListener reports whether any listener is SASL_PLAINTEXT or
// SASL_SSL.
func (b *Broker) hasSASLListener() bool {
	return slices.ContainsFunc(b.cfg.Listeners, func(l ListenerConfig) bool { return usesSASL(l.Protocol) })
}

func (c *credentials) deleteSCRAM(name string, m scramMechanism) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scram[name], m)
	if len(c.scram[name]) == 0 {
		delete(c.scram, name)
	}
	if c.journal != nil {
		c.journal(name, m, nil)
	}
}

// scramInfo is what DescribeUserScramCredentials may tell of a credential.
type scramInfo struct {
	mech       scramMechanism
	iterations int32
}

// describeSCRAM lists each user's credentials, mechanisms in order.
func (c *credentials) describeSCRAM() map[string][]scramInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]scramInfo, len(c.scram))
	for name, byMech := range c.scram {
		for _, m := range []scramMechanism{scramSHA256, scramSHA512} {
			if cred, ok := byMech[m]; ok {
				out[name] = append(out[name], scramInfo{m, cred.iterations})
			}
		}
	}
	return out
}
