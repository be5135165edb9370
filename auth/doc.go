// Package auth owns one question: who a client is. It sets up TLS for the
// SSL and SASL_SSL listeners (their certificate, given or generated with
// the CA served at /v1/tls/ca.pem, and ssl.client.auth with its client
// CA) and names the principal of a client certificate; it runs the server
// side of the SASL mechanisms (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
// through github.com/xdg-go/scram, OAUTHBEARER with unsecured tokens
// checked on the broker's clock) and a connection's authentication
// session with its KIP-368 lifetime; and it keeps the SASL users'
// credentials: the PLAIN passwords fixed at start and the SCRAM salted
// keys that DescribeUserScramCredentials lists and
// AlterUserScramCredentials changes (docs/security.md).
//
// It sees no Kafka frames: which request may come next on a SASL
// connection is the broker's gate (broker/sasl.go), which feeds this
// package the mechanism messages and turns its results and sentinel
// errors into Kafka answers and codes. It counts nothing either; the
// broker's metrics count what it returns. It imports crypto/tls, and so
// net, because TLS is its job; never kmsg or the wire package.
package auth
