package broker

// SASL on SASL_PLAINTEXT and SASL_SSL listeners (docs/security.md,
// "SASL"), as Kafka's SaslServerAuthenticator and KafkaChannel run it:
//
//   - Before authentication a connection may send ApiVersions once, then
//     SaslHandshake. Any other request closes it (sasl-first).
//   - SaslHandshake v1 is followed by SaslAuthenticate requests carrying
//     the mechanism's messages; v0 by the messages themselves, each a
//     4-byte length and the bytes, without Kafka framing (sasl-v0-raw).
//   - A failure answers and closes: UNSUPPORTED_SASL_MECHANISM to the
//     handshake, SASL_AUTHENTICATION_FAILED to SaslAuthenticate, nothing
//     at all in the raw flow.
//   - Frames are bounded by sasl.server.max.receive.size until the client
//     is authenticated.
//   - With a session lifetime (connections.max.reauth.ms, or an
//     OAUTHBEARER token's exp) a SaslHandshake after authentication starts
//     a re-authentication (KIP-368) and any other request after the
//     session expired closes the connection.
//
// The gate here decides on requests; the exchanges, the session's user
// and lifetime and the failure messages are package auth's (auth.Session).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/metrics"
	"github.com/sharebroker/sharebroker/wire"
)

// Properties of SASL, in the property table (package brokerconfig).
const (
	propReauthMs       = "connections.max.reauth.ms"
	propSASLMaxReceive = "sasl.server.max.receive.size"
)

// saslState is where a connection is in its SASL conversation. States
// start at 1 so the zero entry of saslMoves means "close".
type saslState uint8

const (
	saslInitial      saslState = iota + 1 // nothing received yet
	saslVersionsDone                      // ApiVersions answered: SaslHandshake next
	saslReauth                            // authenticated, a re-authentication's SaslHandshake is next
	saslAuthenticate                      // SaslHandshake v1 accepted: SaslAuthenticate next
	saslRawToken                          // SaslHandshake v0 accepted: raw mechanism messages next
	saslBadMechanism                      // re-authentication asked for another mechanism
	saslComplete                          // authenticated
	saslFailed                            // the exchange failed: the connection closes
	numSASLStates
)

var saslStateNames = [numSASLStates]string{
	saslInitial: "initial", saslVersionsDone: "handshake", saslReauth: "reauthentication handshake",
	saslAuthenticate: "authenticate", saslRawToken: "raw token", saslBadMechanism: "bad reauthentication mechanism",
	saslComplete: "complete", saslFailed: "failed",
}

func (s saslState) String() string { return saslStateNames[s] }

// saslEvent is the kind of a request arriving on a SASL connection.
type saslEvent uint8

const (
	evAPIVersions saslEvent = iota
	evHandshake
	evAuthenticate
	evOther
	numSASLEvents
)

// saslMove is what a request does in a state.
type saslMove uint8

const (
	// moveClose closes the connection without an answer: Kafka's
	// InvalidRequestException, IllegalStateException or an exchange
	// already failed.
	moveClose saslMove = iota
	// moveServe dispatches the request to its handler.
	moveServe
	// moveRefuse answers the request with ILLEGAL_SASL_STATE and
	// closes (Kafka's handleSaslToken for a request that is not
	// SaslAuthenticate).
	moveRefuse
)

// saslMoves is every legal move; a zero entry closes the connection.
// saslRawToken has none: its frames are mechanism messages, not requests.
var saslMoves = [numSASLStates][numSASLEvents]saslMove{
	saslInitial:      {evAPIVersions: moveServe, evHandshake: moveServe},
	saslVersionsDone: {evHandshake: moveServe},
	saslReauth:       {evHandshake: moveServe},
	saslAuthenticate: {evAuthenticate: moveServe, evAPIVersions: moveRefuse, evHandshake: moveRefuse, evOther: moveRefuse},
	saslComplete:     {evAPIVersions: moveServe, evHandshake: moveServe, evAuthenticate: moveServe, evOther: moveServe},
}

// saslConn is the SASL side of a connection on a SASL listener: where
// its conversation is, and the authentication session it drives. Only
// the connection's goroutine touches it.
type saslConn struct {
	state saslState
	auth.Session
	// badMechanism is why a re-authentication cannot go on.
	badMechanism string
}

func saslEventOf(key int16) saslEvent {
	switch key {
	case apiVersionsKey:
		return evAPIVersions
	case saslHandshakeKey:
		return evHandshake
	case saslAuthenticateKey:
		return evAuthenticate
	}
	return evOther
}

// authenticated reports whether the connection may send any request.
func (s *saslConn) authenticated() bool { return s.state == saslComplete }

// saslGate decides what the request with header h does before it is
// dispatched, moving the state where the request itself decides it. It
// returns true to dispatch the request, false to close the connection
// (the line saying why is logged here).
func (c *conn) saslGate(h wire.Header, body []byte) bool {
	s := c.sasl
	now := c.b.clock.Now()
	ev := saslEventOf(h.APIKey)
	if s.state == saslComplete {
		if ev == evHandshake && s.Reauthenticate(now) {
			// KIP-368: the handshake begins a re-authentication, even
			// after the session expired; too soon after the last one,
			// it is served as after authentication (ILLEGAL_SASL_STATE).
			s.state = saslReauth
		} else if s.Expired(now) {
			c.log.Warn("closing connection: SASL session expired without re-authentication",
				attrAPI, kmsg.NameForKey(h.APIKey), attrMechanism, s.Mech, "expired", s.Expiry)
			return false
		}
	}
	switch saslMoves[s.state][ev] {
	case moveServe:
		if ev == evAPIVersions && s.state == saslInitial {
			if c.b.servesVersion(h.APIKey, h.APIVersion) {
				// An ApiVersions at a version we do not serve is
				// answered and leaves the state alone, as Kafka's
				// handleApiVersionsRequest does.
				s.state = saslVersionsDone
			}
		}
		return true
	case moveRefuse:
		c.refuseSASL(h, body)
		return false
	case moveClose:
	}
	if s.state == saslBadMechanism {
		c.log.Warn("closing connection: SASL re-authentication failed", attrReason, s.badMechanism)
		c.b.metrics.SASLAuth(s.Mech, false, c.nodeLabel())
		s.state = saslFailed
		c.delayFailedAuth()
		return false
	}
	c.log.Warn("closing connection: request not allowed before SASL authentication",
		attrAPI, kmsg.NameForKey(h.APIKey), "api_key", h.APIKey, attrAPIVersion, h.APIVersion, attrClientID, h.ClientID,
		"sasl_state", s.state.String())
	c.delayFailedAuth()
	return false
}

// refuseSASL answers a request that came instead of SaslAuthenticate with
// ILLEGAL_SASL_STATE in every error field; the caller closes. A request
// that does not decode gets no answer.
func (c *conn) refuseSASL(h wire.Header, body []byte) {
	var req kmsg.Request
	var err error
	if c.b.servesVersion(h.APIKey, h.APIVersion) {
		req, err = wire.DecodeBody(h, body)
	}
	c.log.Warn("closing connection: request other than SaslAuthenticate during SASL authentication",
		attrAPI, kmsg.NameForKey(h.APIKey), attrAPIVersion, h.APIVersion, attrClientID, h.ClientID)
	c.delayFailedAuth() // Kafka's IllegalSaslStateException is an authentication failure
	if req == nil || err != nil {
		return
	}
	resp := wire.ErrorResponse(req, kerr.IllegalSaslState.Code)
	resp.SetVersion(h.APIVersion)
	c.send(h.CorrelationID, resp)
}

// saslHandshake serves SaslHandshake on a SASL connection that has not
// authenticated or is re-authenticating. It returns the answer and
// whether the connection goes on after it is sent.
func (c *conn) saslHandshake(mech string, version int16) (*kmsg.SASLHandshakeResponse, bool) {
	s := c.sasl
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = c.b.authn.Mechanisms()
	err := s.Begin(c.b.authn, mech)
	if errors.Is(err, auth.ErrMechanismNotEnabled) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.b.metrics.SASLAuth(metrics.MechUnsupported, false, c.nodeLabel())
		c.log.Warn("closing connection: SASL mechanism not enabled", attrMechanism, mech, "enabled", c.b.authn.Mechanisms())
		s.state = saslFailed
		return resp, false
	}
	if err != nil {
		// A re-authentication asked for another mechanism: answered
		// here, failed at the next frame.
		s.state = saslBadMechanism
		s.badMechanism = err.Error()
		return resp, true
	}
	s.state = saslAuthenticate
	if version == 0 {
		s.state = saslRawToken
	}
	return resp, true
}

// saslStep feeds one mechanism message to the exchange under way. On
// success it returns the server's message and the session lifetime (0:
// none); when the client is authenticated, the state is complete and the
// principal set. On failure it returns the message for the client, the
// failure already logged and counted.
func (c *conn) saslStep(in []byte) (out []byte, lifetimeMs int64, failMsg string, ok bool) {
	s := c.sasl
	maxReauth := time.Duration(c.b.cfg.props.Int64(propReauthMs)) * time.Millisecond
	res, fail := s.Step(in, c.b.clock.Now(), maxReauth)
	if fail != nil {
		c.b.metrics.SASLAuth(s.Mech, false, c.nodeLabel())
		c.log.Warn("closing connection: SASL authentication failed", attrMechanism, s.Mech, attrReauth, res.Reauth, attrReason, fail.Error())
		s.state = saslFailed
		return nil, 0, fail.ClientMessage(s.Mech, res.Reauth), false
	}
	if !res.Done {
		return res.Out, 0, "", true
	}
	s.state = saslComplete
	principal := "User:" + s.User
	c.b.mu.Lock() // Principals (tests) reads it from another goroutine
	c.principal = principal
	c.b.mu.Unlock()
	c.b.metrics.SASLAuth(s.Mech, true, c.nodeLabel())
	c.log.Debug("SASL authentication done", attrMechanism, s.Mech, attrPrincipal, principal,
		attrReauth, res.Reauth, "session_lifetime", res.Lifetime)
	return res.Out, res.Lifetime.Milliseconds(), "", true
}

// rawSASLToken serves one frame of the v0 flow: a mechanism message
// without Kafka framing, answered the same way. A failure closes the
// connection without an answer, as Kafka does.
func (c *conn) rawSASLToken(frame []byte) bool {
	out, _, _, ok := c.saslStep(frame)
	if !ok {
		c.delayFailedAuth() // the close is the answer
		return false
	}
	c.quota.Idle() // as send does
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	c.buf = binary.BigEndian.AppendUint32(c.buf[:0], uint32(len(out)))
	c.buf = append(c.buf, out...)
	_, err := c.nc.Write(c.buf)
	return c.sent(err)
}

// delayFailedAuth holds the connection's answer to a failed
// authentication, or its close when there is no answer, for
// connection.failed.authentication.delay.ms in real time
// (failed-authentication-delay; auth.DelayFailure says why real time). A
// closing broker cuts it short.
func (c *conn) delayFailedAuth() {
	auth.DelayFailure(c.b.serveCtx, c.b.cfg.props.Connections().FailedAuthDelay)
}

// maxFrame is the largest frame the connection accepts next: the SASL
// bound until the client has authenticated.
func (c *conn) maxFrame() int32 {
	n := c.b.cfg.props.Int32("socket.request.max.bytes")
	if c.sasl != nil && !c.sasl.authenticated() {
		n = min(n, c.b.cfg.props.Int32(propSASLMaxReceive))
	}
	return n
}

// saslCheck reports the first broken invariant of the connection's SASL
// state, for tests and the fuzz target after every step.
func (c *conn) saslCheck() error {
	s := c.sasl
	c.b.mu.Lock()
	principal := c.principal
	c.b.mu.Unlock()
	exchanging := s.state == saslAuthenticate || s.state == saslRawToken
	switch {
	case s.state < saslInitial || s.state >= numSASLStates:
		return fmt.Errorf("state %d out of range", s.state)
	case exchanging != (s.Exchange != nil):
		return fmt.Errorf("state %v with exchange %v", s.state, s.Exchange != nil)
	case s.state == saslComplete && (s.User == "" || principal != "User:"+s.User):
		return fmt.Errorf("complete as %q with principal %q", s.User, principal)
	case s.User == "" && principal != auth.AnonymousPrincipal:
		return fmt.Errorf("principal %q before any authentication", principal)
	case s.User == "" && (s.Reauthing || !s.Expiry.IsZero()):
		return fmt.Errorf("re-authenticating or expiring before any authentication")
	case (s.state == saslReauth || s.state == saslBadMechanism) && !s.Reauthing:
		return fmt.Errorf("state %v outside a re-authentication", s.state)
	}
	return nil
}
