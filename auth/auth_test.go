package auth

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func newTestAuthenticator(t *testing.T, mechs ...string) *Authenticator {
	t.Helper()
	a, err := New(Config{Users: []SASLUser{{Name: "alice", Password: "alice-secret"}}, Mechanisms: mechs,
		Listeners: []Listener{{Listen: "127.0.0.1:0", SASL: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An exchange and its session run without a socket: PLAIN, then a
// re-authentication that may not change the user.
func TestSessionPlain(t *testing.T) {
	a := newTestAuthenticator(t, MechPlain)
	now := time.Unix(1_700_000_000, 0)
	var s Session
	if err := s.Begin(a, MechSCRAM256); !errors.Is(err, ErrMechanismNotEnabled) {
		t.Fatalf("Begin of a disabled mechanism: %v", err)
	}
	if err := s.Begin(a, MechPlain); err != nil {
		t.Fatal(err)
	}
	res, fail := s.Step([]byte("\x00alice\x00alice-secret"), now, time.Minute)
	if fail != nil || !res.Done || res.Lifetime != time.Minute || res.Reauth {
		t.Fatalf("Step: %+v, %v", res, fail)
	}
	if s.User != "alice" || !s.Expiry.Equal(now.Add(time.Minute)) || s.Exchange != nil {
		t.Fatalf("session after authentication: %+v", s)
	}
	if s.Expired(now.Add(time.Minute)) || !s.Expired(now.Add(time.Minute+1)) {
		t.Error("expiry not at the end of the lifetime")
	}
	if !s.Reauthenticate(now) || s.Reauthenticate(now.Add(MinReauthInterval-1)) {
		t.Error("re-authentication not bounded by MinReauthInterval")
	}
	if err := s.Begin(a, MechPlain); err != nil {
		t.Fatal(err)
	}
	res, fail = s.Step([]byte("\x00bob\x00x"), now, time.Minute)
	if fail == nil || !res.Reauth {
		t.Fatalf("re-authentication as an unknown user: %+v", res)
	}
	if got, want := fail.ClientMessage(s.Mech, res.Reauth), "Authentication failed: Invalid username or password"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// A failure that is not public tells the client Kafka's generic message.
func TestFailureClientMessage(t *testing.T) {
	f := privateFailure("no such user").(*Failure)
	for reauth, want := range map[bool]string{
		false: "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		true:  "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
	} {
		if got := f.ClientMessage(MechSCRAM512, reauth); got != want {
			t.Errorf("reauth %v: %q, want %q", reauth, got, want)
		}
	}
}

// An OAUTHBEARER token's expiry shortens the session below
// connections.max.reauth.ms, on the clock the caller gives.
func TestSessionOAuthLifetime(t *testing.T) {
	a := newTestAuthenticator(t, MechOAuth)
	now := time.Unix(1_700_000_000, 0)
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"sub":"carol","exp":1700000030}`)) + "."
	var s Session
	if err := s.Begin(a, MechOAuth); err != nil {
		t.Fatal(err)
	}
	res, fail := s.Step([]byte("n,,\x01auth=Bearer "+token+"\x01\x01"), now, time.Minute)
	if fail != nil || !res.Done || res.Lifetime != 30*time.Second || s.User != "carol" {
		t.Fatalf("Step: %+v, %v, user %q", res, fail, s.User)
	}
}

// Rule scram-admin: every entry is checked before any change.
func TestAlterSCRAM(t *testing.T) {
	c, err := NewCredentials([]SASLUser{{Name: "alice", Password: "alice-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("salted")
	got := c.AlterSCRAM(
		[]SCRAMDeletion{{"alice", SCRAMSHA256}, {"bob", SCRAMSHA256}, {"dave", SCRAMSHA512}},
		[]SCRAMUpsertion{
			{User: "alice", Mechanism: SCRAMSHA512, Iterations: 4096, SaltedPassword: key},
			{User: "carol", Mechanism: SCRAMSHA256, Iterations: 4095, SaltedPassword: key},
			{User: "erin", Mechanism: 3, Iterations: 4096, SaltedPassword: key},
			{User: "frank", Mechanism: SCRAMSHA256, Iterations: 4096},
			{User: "grace", Mechanism: SCRAMSHA256, Iterations: 16384, SaltedPassword: key},
		})
	// Errors come in the order the users first failed: alice's
	// deletion passed, her upsertion made her a duplicate.
	want := []struct {
		user     string
		sentinel error
		msg      string
	}{
		{"grace", nil, ""},
		{"bob", ErrNoCredential, "Attempt to delete a user credential that does not exist"},
		{"dave", ErrNoCredential, "Attempt to delete a user credential that does not exist"},
		{"alice", ErrDuplicateUser, "A user credential cannot be altered twice in the same request"},
		{"carol", ErrUnacceptableCredential, "Too few iterations"},
		{"erin", ErrUnsupportedMechanism, "Unknown SCRAM mechanism"},
		{"frank", nil, "Empty key"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		msg := ""
		if g.Err != nil {
			msg = g.Err.Error()
		}
		if g.User != w.user || msg != w.msg || (w.sentinel != nil && !errors.Is(g.Err, w.sentinel)) {
			t.Errorf("result %d: %s %v, want %s %q", i, g.User, g.Err, w.user, w.msg)
		}
	}
	if _, ok := c.LookupSCRAM("alice", SCRAMSHA256); !ok {
		t.Error("alice's credential went although her entries failed")
	}
	d := c.DescribeSCRAM([]string{"grace", "alice", "grace", "nobody"})
	var names []string
	for _, u := range d {
		names = append(names, u.User)
	}
	if strings.Join(names, ",") != "alice,grace,nobody" || len(d[0].Infos) != 2 ||
		!errors.Is(d[1].Err, ErrDuplicateUser) || !errors.Is(d[2].Err, ErrNoCredential) {
		t.Errorf("DescribeSCRAM: %+v", d)
	}
}

// A generated certificate covers the listeners' hosts and is signed by
// the CA served as PEM.
func TestGeneratedCertificate(t *testing.T) {
	a, err := New(Config{ClientAuth: ClientAuthNone,
		Listeners: []Listener{{Listen: "0.0.0.0:9093", Advertise: "broker.example:9093", TLS: true}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := a.TLSConfig()
	if cfg == nil || len(cfg.Certificates) != 1 || a.CAPEM() == nil || cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("TLS setup: %+v", cfg)
	}
	leaf := cfg.Certificates[0].Certificate[0]
	if !strings.Contains(string(leaf), "broker.example") {
		t.Error("certificate does not name the advertised host")
	}
	if PrincipalOf(tls.ConnectionState{}) != AnonymousPrincipal {
		t.Error("no client certificate is not ANONYMOUS")
	}
}
