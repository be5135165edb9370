package broker

// SaslAuthenticate (key 36), v0-v2.
//
//   - After a SaslHandshake v1 on a SASL listener it carries the
//     mechanism's messages (sasl.go). A failure is
//     SASL_AUTHENTICATION_FAILED with a message, and the connection closes
//     after the answer.
//   - v1+ reports SessionLifetimeMs when the client has authenticated: 0
//     without a session lifetime, else connections.max.reauth.ms or the
//     time to an OAUTHBEARER token's expiry, whichever is less.
//   - Anywhere else it is ILLEGAL_SASL_STATE with Kafka's message, as
//     KafkaApis.handleSaslAuthenticateRequest answers; the connection
//     stays.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const saslAuthenticateKey = 36

func init() {
	register(saslAuthenticateKey, 0, 2, handleSaslAuthenticate)
}

func handleSaslAuthenticate(_ *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.SASLAuthenticateRequest)
	c := r.conn
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if c.sasl == nil || c.sasl.state != saslAuthenticate {
		// saslGate lets SaslAuthenticate through only in the
		// authenticate state or once authenticated.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	out, lifetimeMs, failMsg, ok := c.saslStep(req.SASLAuthBytes)
	if !ok {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &failMsg
		c.closeAfterSend = true
		return resp, nil
	}
	resp.SASLAuthBytes = out
	resp.SessionLifetimeMillis = lifetimeMs
	return resp, nil
}
