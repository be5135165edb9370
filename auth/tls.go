package auth

// TLS listeners (docs/security.md): a listener whose security protocol is
// SSL or SASL_SSL wraps each accepted connection in crypto/tls. The
// certificate is either the one the configuration names
// (TLSConfig.CertFile and KeyFile, PEM) or, with neither, one generated
// at start and signed by a CA that is also generated at start, served at
// GET /v1/tls/ca.pem.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// PropClientAuth is Kafka's ssl.client.auth: none, requested or
// required.
const PropClientAuth = "ssl.client.auth"

// Values of ssl.client.auth.
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// AnonymousPrincipal is the principal of a connection without a client
// certificate or SASL user (Kafka's KafkaPrincipal.ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// HandshakeTimeout bounds the TLS handshake of one connection.
const HandshakeTimeout = 10 * time.Second

// TLSConfig configures the SSL and SASL_SSL listeners.
type TLSConfig struct {
	// CertFile and KeyFile are the server certificate chain and its key,
	// PEM. Set both or neither: with neither, a CA and a certificate for
	// the listeners' host names are generated at start.
	CertFile, KeyFile string
	// ClientCAFile holds the PEM CA certificates that sign client
	// certificates; needed when ssl.client.auth is requested or required.
	ClientCAFile string
	// CertPEM, KeyPEM and ClientCAPEM are the same in memory, for a
	// certificate read from a Kafka keystore (ssl.keystore.location);
	// each replaces the file of the same role, which must then be empty.
	CertPEM, KeyPEM, ClientCAPEM string
}

// listenerTLS is the resolved TLS setup: the tls.Config of the SSL listeners
// and, when it was generated, the CA that signed their certificate.
type listenerTLS struct {
	config *tls.Config
	caPEM  []byte // nil unless generated
}

// newListenerTLS builds the TLS setup of the SSL and SASL_SSL listeners;
// nil when there is none.
func newListenerTLS(c TLSConfig, clientAuth string, ls []Listener) (*listenerTLS, error) {
	if !slices.ContainsFunc(ls, func(l Listener) bool { return l.TLS }) {
		return nil, nil
	}
	out := &listenerTLS{config: &tls.Config{MinVersion: tls.VersionTLS12}}
	switch {
	case len(c.CertPEM) > 0 && len(c.KeyPEM) > 0:
		cert, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("tls certificate and key from the keystore: %w", err)
		}
		out.config.Certificates = []tls.Certificate{cert}
	case c.CertFile != "" && c.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls certificate %s and key %s: %w", c.CertFile, c.KeyFile, err)
		}
		out.config.Certificates = []tls.Certificate{cert}
	case c.CertFile != "":
		return nil, errors.New("tls certificate given without its key")
	case c.KeyFile != "":
		return nil, errors.New("tls key given without its certificate")
	default:
		cert, caPEM, err := generateCertificate(tlsHostNames(ls))
		if err != nil {
			return nil, fmt.Errorf("generating the tls certificate: %w", err)
		}
		out.config.Certificates = []tls.Certificate{cert}
		out.caPEM = caPEM
	}
	switch clientAuth {
	case ClientAuthNone:
		out.config.ClientAuth = tls.NoClientCert
	case ClientAuthRequested:
		out.config.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		out.config.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if clientAuth != ClientAuthNone && len(c.ClientCAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.ClientCAPEM)) {
			return nil, errors.New("tls client CA from the truststore: no certificate in it")
		}
		out.config.ClientCAs = pool
	} else if clientAuth != ClientAuthNone {
		if c.ClientCAFile == "" {
			return nil, fmt.Errorf("%s=%s needs the client CA file (--tls-client-ca)", PropClientAuth, clientAuth)
		}
		data, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("tls client CA %s: no PEM certificate in it", c.ClientCAFile)
		}
		out.config.ClientCAs = pool
	}
	return out, nil
}

// ParseClientAuth checks a value of ssl.client.auth; empty is none.
func ParseClientAuth(v string) (string, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "":
		return ClientAuthNone, nil
	case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
		return v, nil
	}
	return "", fmt.Errorf("%s=%q: want required, requested or none", PropClientAuth, v)
}

// tlsHostNames are the names a generated certificate covers: localhost,
// the loopback addresses, and every listener's listen and advertised host.
func tlsHostNames(ls []Listener) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	for _, l := range ls {
		for _, addr := range []string{l.Listen, l.Advertise} {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || host == "" {
				continue
			}
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				continue
			}
			names = append(names, host)
		}
	}
	return names
}

// generateCertificate makes a CA and a server certificate it signs for
// hosts (names and IP addresses), ECDSA P-256, valid from an hour ago for
// a year. It returns the server certificate with its key and the CA as PEM.
func generateCertificate(hosts []string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "sharebroker generated CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "sharebroker"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	seen := make(map[string]bool)
	for _, h := range hosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// PrincipalOf is the Kafka principal of a TLS connection under Kafka's
// default mapping: User: and the subject DN of the client certificate in
// RFC 2253 form, or User:ANONYMOUS without one.
func PrincipalOf(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return AnonymousPrincipal
	}
	cert := cs.PeerCertificates[0]
	// The raw subject keeps the certificate's own attribute order, as
	// Java's X500Principal does; pkix.Name would reorder it.
	var dn pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &dn); err != nil || len(rest) > 0 {
		return "User:" + cert.Subject.String()
	}
	return "User:" + dn.String()
}
