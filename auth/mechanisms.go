package auth

// The server side of each SASL mechanism: PLAIN (RFC 4616, as Kafka's
// PlainSaslServer), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802 through
// github.com/xdg-go/scram, with the checks Kafka's ScramSaslServer adds)
// and OAUTHBEARER with unsecured tokens (RFC 7628, as Kafka's
// OAuthBearerSaslServer with OAuthBearerUnsecuredValidatorCallbackHandler).
// Each is a small state machine fed the client's messages; none does I/O.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/xdg-go/scram"
)

// Exchange is one exchange of one mechanism.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer, and whether the client is now authenticated. A *Failure
	// error ends the exchange.
	Step(in []byte, now time.Time) (out []byte, done bool, err error)
	// User is the authenticated name, once done.
	User() string
	// Expires is when the credential stops being valid (an OAUTHBEARER
	// token's exp), or zero.
	Expires() time.Time
}

// Failure is why an exchange failed. public says the message may go to
// the client as is (Kafka's SaslAuthenticationException); otherwise the
// client gets a generic message and the reason is only logged, so a
// client cannot learn whether a user exists (Kafka's SaslException).
type Failure struct {
	reason string
	public bool
	detail string // for the log only; empty when reason says it all
}

// Error is the whole reason, for the log.
func (f *Failure) Error() string {
	if f.detail != "" {
		return f.reason + ": " + f.detail
	}
	return f.reason
}

func publicFailure(reason string) error { return &Failure{reason: reason, public: true} }

func privateFailure(format string, args ...any) error {
	return &Failure{reason: fmt.Sprintf(format, args...)}
}

// ClientMessage is what the client is told of the failure of an exchange
// of mech: the reason when it is public, else Kafka's generic message.
func (f *Failure) ClientMessage(mech string, reauth bool) string {
	if f.public {
		return f.reason
	}
	what := "authentication"
	if reauth {
		what = "re-authentication"
	}
	return fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, mech)
}

// NewExchange starts an exchange of mechanism mech, one of the Mech
// names, with the broker's users.
func (a *Authenticator) NewExchange(mech string) Exchange {
	creds := a.Credentials
	switch mech {
	case MechPlain:
		return &plainServer{creds: creds}
	case MechSCRAM256, MechSCRAM512:
		m, _ := scramMechanismByName(mech)
		return newSCRAMServer(creds, m)
	case MechOAuth:
		return &oauthServer{}
	}
	panic("NewExchange: not a mechanism: " + mech)
}

// plainServer checks "authzid NUL authcid NUL password".
type plainServer struct {
	creds *Credentials
	name  string
}

func (s *plainServer) Step(in []byte, _ time.Time) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 {
		// Kafka's extractTokens stops counting at four.
		return nil, false, privateFailure("Invalid SASL/PLAIN response: expected 3 tokens, got %d", min(len(parts), 4))
	}
	authzid, name, password := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case name == "":
		return nil, false, publicFailure("Authentication failed: username not specified")
	case password == "":
		return nil, false, publicFailure("Authentication failed: password not specified")
	case !s.creds.checkPlain(name, password):
		return nil, false, publicFailure("Authentication failed: Invalid username or password")
	case authzid != "" && authzid != name:
		return nil, false, publicFailure("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.name = name
	return []byte{}, true, nil
}

func (s *plainServer) User() string       { return s.name }
func (s *plainServer) Expires() time.Time { return time.Time{} }

// scramServer runs the two SCRAM round trips through xdg-go/scram's
// server conversation, adding Kafka's own checks of the client's first
// message.
type scramServer struct {
	conv  *scram.ServerConversation
	mech  SCRAMMechanism
	name  string
	steps int
}

func newSCRAMServer(creds *Credentials, m SCRAMMechanism) *scramServer {
	lookup := func(saslName string) (scram.StoredCredentials, error) {
		cred, ok := creds.LookupSCRAM(scramUsername(saslName), m)
		if !ok {
			return scram.StoredCredentials{}, errors.New("no such user")
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: int(cred.Iterations)},
			StoredKey:  cred.StoredKey,
			ServerKey:  cred.ServerKey,
		}, nil
	}
	hashGen := scram.SHA256
	if m == SCRAMSHA512 {
		hashGen = scram.SHA512
	}
	server, err := hashGen.NewServer(lookup)
	if err != nil {
		panic(err) // NewServer fails for no input
	}
	return &scramServer{conv: server.NewConversation(), mech: m}
}

// scramUsername decodes a SCRAM saslname (RFC 5802: "," is "=2C" and "="
// is "=3D"), as Kafka's ScramFormatter.username does.
func scramUsername(saslName string) string {
	return strings.ReplaceAll(strings.ReplaceAll(saslName, "=2C", ","), "=3D", "=")
}

func (s *scramServer) Step(in []byte, _ time.Time) ([]byte, bool, error) {
	msg := string(in)
	s.steps++
	switch s.steps {
	case 1:
		// Kafka's ClientFirstMessage pattern accepts only the gs2 flag
		// "n": a client that wants channel binding ("p=") or says it
		// could use it ("y") is refused.
		if !strings.HasPrefix(msg, "n,") {
			return nil, false, privateFailure("Invalid SCRAM client first message: gs2 header is not \"n,\"")
		}
		if ext := scramExtensions(msg); ext["tokenauth"] == "true" {
			// Delegation tokens do not exist here, so a token
			// credential is never found (Kafka's lookup of an
			// unknown token).
			return nil, false, privateFailure("delegation token authentication is not supported")
		}
		authzid, forConv := scramAuthzid(msg)
		out, err := s.conv.Step(forConv)
		if err != nil {
			return nil, false, privateFailure("SCRAM client first message: %v", err)
		}
		s.name = scramUsername(s.conv.Username())
		// An authzid is allowed when it is the username itself, compared
		// as Kafka's ScramSaslServer compares them: the authzid as sent
		// with the decoded username (scram-authzid).
		if authzid != "" && authzid != s.name {
			return nil, false, publicFailure("Authentication failed: Client requested an authorization id that is different from username")
		}
		return []byte(out), false, nil
	case 2:
		out, err := s.conv.Step(msg)
		if err != nil || !s.conv.Valid() {
			return nil, false, privateFailure("SCRAM client final message: %v", err)
		}
		return []byte(out), true, nil
	}
	return nil, false, privateFailure("SCRAM exchange already complete")
}

// scramAuthzid returns the authzid of a client first message that starts
// "n," (empty if it names none) and the message to hand xdg-go/scram.
// xdg-go/scram v1.1.2 rebuilds the gs2 header it expects back in the
// client's final message (c=) as "n," + authzid + "," and so drops the
// authzid's "a=": a client that names one, as RFC 5802 writes it, would
// fail there with channel-bindings-dont-match. Handing it the field with
// "a=" doubled makes the header it rebuilds the client's own; the bare
// message the proofs cover is left as sent.
func scramAuthzid(clientFirst string) (authzid, forConv string) {
	field, rest, ok := strings.Cut(strings.TrimPrefix(clientFirst, "n,"), ",")
	z, named := strings.CutPrefix(field, "a=")
	if !ok || !named || z == "" {
		return "", clientFirst
	}
	return z, "n,a=a=" + z + "," + rest
}

// scramExtensions returns the key=value attributes after the nonce of a
// client first message (Kafka's ScramExtensions).
func scramExtensions(clientFirst string) map[string]string {
	fields := strings.Split(clientFirst, ",")
	out := make(map[string]string)
	for i, f := range fields {
		if i < 4 { // gs2 flag, authzid, n=, r=
			continue
		}
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}

func (s *scramServer) User() string       { return s.name }
func (s *scramServer) Expires() time.Time { return time.Time{} }

// oauthServer validates an unsecured JWS (alg "none", empty signature) as
// Kafka's OAuthBearerUnsecuredValidatorCallbackHandler does with its
// default options: principal claim "sub", scope claim "scope", no
// required scope, no allowed clock skew. A token that does not validate
// is answered with an RFC 7628 error challenge; the client's %x01 reply
// then fails the exchange with that challenge as the message.
type oauthServer struct {
	errChallenge string // sent, awaiting the client's %x01
	invalid      string // why the token was refused, for the log
	name         string
	exp          time.Time
}

// oauthInitialResponse is RFC 7628's client initial response as Kafka's
// OAuthBearerClientInitialResponse matches it: the gs2 header "n," with
// an optional authzid, then key=value pairs each ended by %x01, then a
// final %x01.
var oauthInitialResponse = regexp.MustCompile(`\An,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01\z`)

// oauthAuth is the auth value: a scheme and a token.
var oauthAuth = regexp.MustCompile(`\A(\w+) +([-_.a-zA-Z0-9]+)\z`)

func (s *oauthServer) Step(in []byte, now time.Time) ([]byte, bool, error) {
	if len(in) == 1 && in[0] == 0x01 && s.errChallenge != "" {
		return nil, false, &Failure{reason: s.errChallenge, public: true, detail: s.invalid}
	}
	s.errChallenge, s.invalid = "", ""
	m := oauthInitialResponse.FindSubmatch(in)
	if m == nil {
		return nil, false, privateFailure("Invalid OAUTHBEARER client first message")
	}
	authzid := string(m[1])
	var auth string
	var haveAuth bool
	for _, kv := range strings.Split(strings.TrimSuffix(string(m[2]), "\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			auth, haveAuth = v, true
		}
		// Other keys are SASL extensions; the unsecured validator
		// accepts every extension, so they are not checked further.
	}
	if !haveAuth {
		return nil, false, privateFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuth.FindStringSubmatch(auth)
	if am == nil {
		return nil, false, privateFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "bearer") {
		return nil, false, privateFailure("Invalid scheme in OAUTHBEARER client first message: %s", am[1])
	}
	tok, reason := validateUnsecuredJWS(am[2], now)
	if reason != "" {
		// The reason stays in our log; the client gets the status only,
		// as Kafka's jsonErrorResponse builds it.
		s.errChallenge, s.invalid = `{"status":"invalid_token"}`, reason
		return []byte(s.errChallenge), false, nil
	}
	if authzid != "" && authzid != tok.sub {
		return nil, false, publicFailure(fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, tok.sub))
	}
	s.name, s.exp = tok.sub, tok.exp
	return []byte{}, true, nil
}

func (s *oauthServer) User() string       { return s.name }
func (s *oauthServer) Expires() time.Time { return s.exp }

// unsecuredToken is what a valid unsecured JWS says.
type unsecuredToken struct {
	sub string
	exp time.Time
}

// validateUnsecuredJWS checks a compact serialization as Kafka's
// OAuthBearerUnsecuredJws and OAuthBearerValidationUtils do, at now. It
// returns a reason when the token is not valid.
func validateUnsecuredJWS(compact string, now time.Time) (unsecuredToken, string) {
	if strings.Contains(compact, "..") {
		return unsecuredToken{}, "Malformed compact serialization contains '..'"
	}
	parts := strings.Split(compact, ".")
	if len(parts) != 3 {
		return unsecuredToken{}, "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
	}
	var header, claims map[string]any
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[i], "="))
		if err != nil {
			return unsecuredToken{}, "malformed Base64 URL encoded value"
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(dst); err != nil || *dst == nil {
			return unsecuredToken{}, "malformed JSON"
		}
	}
	alg, ok := header["alg"]
	if !ok || alg == nil {
		return unsecuredToken{}, "JWS header must have an Algorithm value"
	}
	if fmt.Sprint(alg) != "none" {
		return unsecuredToken{}, "Unsecured JWS must have 'none' for an algorithm"
	}
	if parts[2] != "" {
		return unsecuredToken{}, "Unsecured JWS must not contain a digital signature"
	}
	exp, ok, reason := numberClaim(claims, "exp")
	if reason != "" {
		return unsecuredToken{}, reason
	}
	if !ok {
		return unsecuredToken{}, "No expiration time in JWT"
	}
	rawSub := claims["sub"]
	sub, isString := rawSub.(string)
	if rawSub != nil && !isString {
		return unsecuredToken{}, fmt.Sprintf("The 'sub' claim was not of type String: %T", rawSub)
	}
	if strings.TrimSpace(sub) == "" {
		return unsecuredToken{}, "No principal name in JWT claim: sub"
	}
	// The scope claim is read (no scope is required) and must be a
	// string or a list, as OAuthBearerUnsecuredJws.calculateScope reads it.
	switch scope := claims["scope"].(type) {
	case nil, string, []any:
	default:
		return unsecuredToken{}, fmt.Sprintf("The 'scope' claim was not of type List: %T", scope)
	}
	iat, hasIat, reason := numberClaim(claims, "iat")
	if reason != "" {
		return unsecuredToken{}, reason
	}
	nowMs := float64(now.UnixMilli())
	if hasIat && 1000*iat > nowMs {
		return unsecuredToken{}, fmt.Sprintf("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (0 ms)", iat, now.UnixMilli())
	}
	if nowMs >= 1000*exp {
		return unsecuredToken{}, fmt.Sprintf("The indicated time (%d ms) minus allowable clock skew (0 ms) was on or after the Expiration Time value (%f seconds)", now.UnixMilli(), exp)
	}
	if hasIat && exp <= iat {
		return unsecuredToken{}, fmt.Sprintf("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	expMs := math.Round(exp * 1000)
	if expMs > math.MaxInt64/2 {
		expMs = math.MaxInt64 / 2 // far enough: the session outlives any test
	}
	return unsecuredToken{sub: sub, exp: time.UnixMilli(int64(expMs))}, ""
}

// numberClaim reads a numeric claim: whether it is there, and a reason
// when it is there but not a number.
func numberClaim(claims map[string]any, name string) (float64, bool, string) {
	v, ok := claims[name]
	if !ok || v == nil {
		return 0, false, ""
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, fmt.Sprintf("The '%s' claim was not of type Number: %T", name, v)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, false, fmt.Sprintf("The '%s' claim is not a finite number", name)
	}
	return f, true, ""
}
