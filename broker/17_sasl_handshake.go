package broker

// SaslHandshake (key 17), v0-v1.
//
//   - On a SASL listener before authentication, or as the first request of
//     a KIP-368 re-authentication, it picks the mechanism (sasl.go): the
//     answer lists sasl.enabled.mechanisms; a mechanism not in it is
//     UNSUPPORTED_SASL_MECHANISM and the connection closes after the
//     answer. v0 is followed by raw mechanism messages, v1 by
//     SaslAuthenticate.
//   - Anywhere else — a PLAINTEXT or SSL listener, or a SASL connection
//     already authenticated that may not re-authenticate now — it is
//     ILLEGAL_SASL_STATE with no mechanisms, as Kafka's
//     KafkaApis.handleSaslHandshakeRequest answers; the connection stays.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const saslHandshakeKey = 17

func init() {
	register(saslHandshakeKey, 0, 1, handleSaslHandshake)
}

func handleSaslHandshake(_ *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.SASLHandshakeRequest)
	c := r.conn
	if c.sasl == nil || c.sasl.authenticated() {
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp, goOn := c.saslHandshake(req.Mechanism, r.header.APIVersion)
	c.closeAfterSend = !goOn
	return resp, nil
}
