package broker

// The broker's side of authentication, which package auth owns: the
// listener security protocols that call for TLS or SASL, and the
// configuration types of Config that come from auth.

import (
	"slices"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/configdef"
)

// TLSConfig configures the SSL and SASL_SSL listeners: their certificate,
// and the client CA for ssl.client.auth.
type TLSConfig = auth.TLSConfig

// SASLUser is one user name and password, as --sasl-user NAME:PASSWORD
// gives them.
type SASLUser = auth.SASLUser

// ParseSASLUser splits NAME:PASSWORD at the first colon: a name cannot
// hold one, a password can. Neither may be empty.
func ParseSASLUser(s string) (SASLUser, error) { return auth.ParseSASLUser(s) }

// newAuthenticator sets up TLS and SASL for the configured listeners.
func newAuthenticator(r *resolved) (*auth.Authenticator, error) {
	ls := make([]auth.Listener, len(r.Listeners))
	for i, l := range r.Listeners {
		ls[i] = auth.Listener{Listen: l.Listen, Advertise: l.Advertise, TLS: l.UsesTLS(), SASL: l.UsesSASL()}
	}
	mechs := configdef.SplitList(r.props[auth.PropEnabledMechanisms])
	if slices.Contains(mechs, auth.MechOAuth) && slices.ContainsFunc(r.Listeners, ListenerConfig.UsesSASL) {
		// oauthbearer-unsecured: as Kafka's unsecured validator, no
		// signature is checked; say so once, where operators look.
		r.Logger.Warn("OAUTHBEARER takes unsecured tokens: any client can claim any principal, a super user included; use it only on a trusted network",
			"mechanisms", r.props[auth.PropEnabledMechanisms])
	}
	return auth.New(auth.Config{TLS: r.TLS, ClientAuth: r.clientAuth, Listeners: ls, Users: r.SASLUsers,
		Mechanisms: mechs})
}

// hasSASLListener reports whether any listener is SASL_PLAINTEXT or
// SASL_SSL.
func (b *Broker) hasSASLListener() bool {
	return slices.ContainsFunc(b.cfg.Listeners, ListenerConfig.UsesSASL)
}

// CAPEM returns the generated CA certificate of the SSL listeners as PEM,
// or nil when no certificate was generated (no SSL or SASL_SSL listener, or a
// certificate given in TLSConfig).
func (b *Broker) CAPEM() []byte { return b.authn.CAPEM() }
