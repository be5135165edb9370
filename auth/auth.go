package auth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Listener is what authentication needs to know of one Kafka listener.
type Listener struct {
	// Listen and Advertise are its addresses, host:port: a generated
	// certificate covers their hosts.
	Listen, Advertise string
	// TLS and SASL say whether its connections are wrapped in TLS (SSL,
	// SASL_SSL) and authenticated with SASL (SASL_PLAINTEXT, SASL_SSL).
	TLS, SASL bool
}

// Config is what New sets authentication up from.
type Config struct {
	// TLS names the certificate and client CA of the TLS listeners.
	TLS TLSConfig
	// ClientAuth is ssl.client.auth as ParseClientAuth returns it.
	ClientAuth string
	// Listeners are the listeners clients connect to.
	Listeners []Listener
	// Users are the SASL users (--sasl-user).
	Users []SASLUser
	// Mechanisms is sasl.enabled.mechanisms, in its configured order.
	Mechanisms []string
}

// Authenticator is the broker's authentication: the TLS setup of its TLS
// listeners, the SASL mechanisms it enables and its users' credentials.
type Authenticator struct {
	tls        *listenerTLS // nil without a TLS listener
	mechanisms []string
	// Credentials are the SASL users. They guard their run-time part
	// themselves; a test may replace them before serving.
	Credentials *Credentials
}

// New checks cfg and sets authentication up: the TLS of the TLS
// listeners (a certificate generated when none is given) and the SASL
// users' credentials. It refuses a broker whose listeners are all SASL
// when no client could authenticate (sasl-needs-a-way-in).
func New(cfg Config) (*Authenticator, error) {
	t, err := newListenerTLS(cfg.TLS, cfg.ClientAuth, cfg.Listeners)
	if err != nil {
		return nil, err
	}
	creds, err := NewCredentials(cfg.Users)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{tls: t, mechanisms: cfg.Mechanisms, Credentials: creds}
	allSASL := !slices.ContainsFunc(cfg.Listeners, func(l Listener) bool { return !l.SASL })
	if allSASL && len(cfg.Users) == 0 && !a.Enabled(MechOAuth) {
		return nil, fmt.Errorf("every listener is SASL but no client could authenticate: give a user (--sasl-user NAME:PASSWORD) or add %s to %s", MechOAuth, PropEnabledMechanisms)
	}
	return a, nil
}

// TLSConfig is the tls.Config of the TLS listeners; nil without one.
func (a *Authenticator) TLSConfig() *tls.Config {
	if a.tls == nil {
		return nil
	}
	return a.tls.config
}

// CAPEM returns the generated CA certificate of the TLS listeners as PEM,
// or nil when no certificate was generated (no TLS listener, or a
// certificate given in TLSConfig).
func (a *Authenticator) CAPEM() []byte {
	if a.tls == nil {
		return nil
	}
	return a.tls.caPEM
}

// Mechanisms are the enabled SASL mechanisms, in their configured order.
func (a *Authenticator) Mechanisms() []string { return a.mechanisms }

// Enabled reports whether mech is in sasl.enabled.mechanisms.
func (a *Authenticator) Enabled(mech string) bool { return slices.Contains(a.mechanisms, mech) }

// MinReauthInterval is how soon after the last one a re-authentication may
// begin: an earlier SaslHandshake is served as after authentication
// (Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS).
const MinReauthInterval = time.Second

// ErrMechanismNotEnabled is a SaslHandshake's mechanism that is not in
// sasl.enabled.mechanisms.
var ErrMechanismNotEnabled = errors.New("SASL mechanism not enabled")

// Session is one connection's SASL authentication, as Kafka's
// SaslServerAuthenticator keeps it: the exchange under way, the user it
// established and the session's lifetime (KIP-368). Which request may
// come next is the broker's gate; the gate and tests read the fields.
// Only the connection's goroutine touches it.
type Session struct {
	// Mech is the mechanism of the exchange under way or, when none is,
	// of the last authentication; Exchange is the exchange (nil between
	// exchanges).
	Mech     string
	Exchange Exchange
	// User is the authenticated user; kept across re-authentications,
	// which must not change it.
	User string
	// Expiry ends the session (zero: never); ReauthStart is when the
	// last re-authentication began, and Reauthing says one is under way.
	Expiry      time.Time
	ReauthStart time.Time
	Reauthing   bool
}

// Reauthenticate begins a re-authentication at now if the session may
// have one: it has a lifetime, and the last one began at least
// MinReauthInterval ago. It reports whether it began one; after the
// session expired it still may (KIP-368).
func (s *Session) Reauthenticate(now time.Time) bool {
	if s.Expiry.IsZero() || !s.ReauthStart.IsZero() && now.Sub(s.ReauthStart) < MinReauthInterval {
		return false
	}
	s.Reauthing, s.ReauthStart = true, now
	return true
}

// Expired reports whether the session has a lifetime that ended before
// now.
func (s *Session) Expired(now time.Time) bool { return !s.Expiry.IsZero() && now.After(s.Expiry) }

// Begin starts an exchange of mech, as a SaslHandshake asks. A mechanism
// not enabled is ErrMechanismNotEnabled. A re-authentication that asks for
// another mechanism than the session's is a *Failure, and no exchange
// starts: Kafka answers that handshake and fails at the next frame, so
// that the failure counts as a re-authentication's.
func (s *Session) Begin(a *Authenticator, mech string) error {
	if !a.Enabled(mech) {
		return ErrMechanismNotEnabled
	}
	if s.Reauthing && mech != s.Mech {
		return &Failure{reason: fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", mech, s.Mech)}
	}
	s.Mech, s.Exchange = mech, a.NewExchange(mech)
	return nil
}

// StepResult is what one message of an exchange gave.
type StepResult struct {
	// Out is the server's answer.
	Out []byte
	// Done says the client is now authenticated; Lifetime is then the
	// session's lifetime (0: none) and Reauth whether this was a
	// re-authentication.
	Done     bool
	Lifetime time.Duration
	Reauth   bool
}

// Step feeds the client's next message to the exchange under way, at
// now; maxReauth is connections.max.reauth.ms (0: none). A failure ends
// the exchange; its ClientMessage is what the client is told. When the
// client is authenticated, the session's user and expiry are set as
// Kafka's calcCompletionTimesAndReturnSessionLifetimeMs works them out: the
// lesser of maxReauth and the time to the credential's expiry.
func (s *Session) Step(in []byte, now time.Time, maxReauth time.Duration) (StepResult, *Failure) {
	out, done, err := s.Exchange.Step(in, now)
	if err == nil && done && s.Reauthing && s.Exchange.User() != s.User {
		err = publicFailure(fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s", s.User, s.Exchange.User()))
	}
	if err != nil {
		s.Exchange = nil
		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{reason: err.Error()} // not for the client: generic message
		}
		return StepResult{Reauth: s.Reauthing}, f
	}
	if !done {
		return StepResult{Out: out}, nil
	}
	s.User = s.Exchange.User()
	var lifetime time.Duration
	credExpiry := s.Exchange.Expires()
	switch {
	case !credExpiry.IsZero() && maxReauth > 0:
		lifetime = min(credExpiry.Sub(now), maxReauth)
	case !credExpiry.IsZero():
		lifetime = credExpiry.Sub(now)
	case maxReauth > 0:
		lifetime = maxReauth
	}
	lifetime = max(lifetime, 0)
	s.Expiry = time.Time{}
	if !credExpiry.IsZero() || maxReauth > 0 {
		s.Expiry = now.Add(lifetime)
	}
	res := StepResult{Out: out, Done: true, Lifetime: lifetime, Reauth: s.Reauthing}
	s.Exchange, s.Reauthing = nil, false
	return res, nil
}
