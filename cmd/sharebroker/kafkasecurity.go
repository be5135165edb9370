package main

// Kafka's own ways of giving a broker its certificate and its SASL users,
// as --config properties (from any source: --config,
// SHAREBROKER_CONFIG_*, KAFKA_*, the file input) and the JAAS file
// KAFKA_OPTS names (docs/kafka-env.md):
//
//   - kafka-keystore: ssl.keystore.location (PKCS12, also under Kafka's
//     default type name JKS, since keytool writes PKCS12 files and Java
//     reads them under either name; or PEM holding the key and the
//     chain), ssl.keystore.password and ssl.key.password give the SSL
//     listeners' certificate; ssl.truststore.location and
//     ssl.truststore.password the CAs of client certificates. A keystore
//     in Java's old proprietary JKS format is refused with the keytool
//     command that converts it.
//   - kafka-jaas-users: the user_NAME="PASSWORD" options of a
//     PlainLoginModule, in listener.name.LISTENER.MECHANISM.sasl.jaas.config
//     or in the KafkaServer section of the JAAS file, are SASL users, as
//     Kafka's PlainServerCallbackHandler reads them.

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/sharebroker/sharebroker/broker"
)

const (
	propKeystoreLocation   = "ssl.keystore.location"
	propKeystorePassword   = "ssl.keystore.password"
	propKeystoreType       = "ssl.keystore.type"
	propKeyPassword        = "ssl.key.password"
	propTruststoreLocation = "ssl.truststore.location"
	propTruststorePassword = "ssl.truststore.password"
	propTruststoreType     = "ssl.truststore.type"
)

// jksMagic starts a keystore in Java's proprietary JKS format.
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// applyKafkaSecurity takes the keystore, truststore and JAAS properties
// out of cfg.Props and turns them into cfg.TLS and cfg.SASLUsers.
func applyKafkaSecurity(cfg *broker.Config, jaasFile string) error {
	take := func(name string) string {
		v := cfg.Props[name]
		delete(cfg.Props, name)
		return strings.TrimSpace(v)
	}
	ksType, ksLoc, ksPass, keyPass := take(propKeystoreType), take(propKeystoreLocation), take(propKeystorePassword), take(propKeyPassword)
	tsType, tsLoc, tsPass := take(propTruststoreType), take(propTruststoreLocation), take(propTruststorePassword)
	if ksLoc != "" {
		if cfg.TLS.CertFile != "" {
			return fmt.Errorf("%s %s and --tls-cert %s: give the certificate one way", propKeystoreLocation, ksLoc, cfg.TLS.CertFile)
		}
		certPEM, keyPEM, err := readKeystore(ksLoc, ksType, ksPass, keyPass)
		if err != nil {
			return fmt.Errorf("%s %s: %w", propKeystoreLocation, ksLoc, err)
		}
		cfg.TLS.CertPEM, cfg.TLS.KeyPEM = string(certPEM), string(keyPEM)
	}
	if tsLoc != "" {
		if cfg.TLS.ClientCAFile != "" {
			return fmt.Errorf("%s %s and --tls-client-ca %s: give the client CA one way", propTruststoreLocation, tsLoc, cfg.TLS.ClientCAFile)
		}
		caPEM, err := readTruststore(tsLoc, tsType, tsPass)
		if err != nil {
			return fmt.Errorf("%s %s: %w", propTruststoreLocation, tsLoc, err)
		}
		cfg.TLS.ClientCAPEM = string(caPEM)
	}
	var jaas []string
	for name, v := range cfg.Props {
		if strings.HasPrefix(name, "listener.name.") && strings.HasSuffix(name, ".sasl.jaas.config") {
			jaas = append(jaas, v)
			delete(cfg.Props, name)
		}
	}
	slices.Sort(jaas)
	if jaasFile != "" {
		data, err := os.ReadFile(jaasFile)
		if err != nil {
			return fmt.Errorf("JAAS file of KAFKA_OPTS: %w", err)
		}
		sections, err := parseJAASFile(string(data))
		if err != nil {
			return fmt.Errorf("JAAS file %s: %w", jaasFile, err)
		}
		for name, body := range sections {
			// KafkaServer, or LISTENER.KafkaServer for one listener.
			if name == "KafkaServer" || strings.HasSuffix(name, ".KafkaServer") {
				jaas = append(jaas, body)
			}
		}
	}
	for _, entry := range jaas {
		users, err := jaasPlainUsers(entry)
		if err != nil {
			return fmt.Errorf("sasl.jaas.config: %w", err)
		}
		for _, u := range users {
			if !slices.ContainsFunc(cfg.SASLUsers, func(have broker.SASLUser) bool { return have.Name == u.Name }) {
				cfg.SASLUsers = append(cfg.SASLUsers, u)
			}
		}
	}
	return nil
}

// readKeystore returns the certificate chain and the key of a keystore
// as PEM.
func readKeystore(path, typ, password, keyPassword string) (certPEM, keyPEM []byte, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	switch strings.ToUpper(typ) {
	case "PEM":
		// The key and the chain in one file, the key unencrypted.
		return data, data, nil
	case "", "JKS", "PKCS12":
	default:
		return nil, nil, fmt.Errorf("%s %s: want PKCS12, JKS (read as PKCS12) or PEM", propKeystoreType, typ)
	}
	if bytes.HasPrefix(data, jksMagic) {
		return nil, nil, fmt.Errorf("a keystore in Java's JKS format, which sharebroker does not read; convert it: keytool -importkeystore -srckeystore %s -destkeystore keystore.p12 -deststoretype PKCS12", path)
	}
	key, cert, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil && keyPassword != "" && keyPassword != password {
		key, cert, chain, err = pkcs12.DecodeChain(data, keyPassword)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading it as PKCS12: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range append([]*x509.Certificate{cert}, chain...) {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// readTruststore returns a truststore's certificates as PEM.
func readTruststore(path, typ, password string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch strings.ToUpper(typ) {
	case "PEM":
		return data, nil
	case "", "JKS", "PKCS12":
	default:
		return nil, fmt.Errorf("%s %s: want PKCS12, JKS (read as PKCS12) or PEM", propTruststoreType, typ)
	}
	if bytes.HasPrefix(data, jksMagic) {
		return nil, fmt.Errorf("a truststore in Java's JKS format, which sharebroker does not read; convert it: keytool -importkeystore -srckeystore %s -destkeystore truststore.p12 -deststoretype PKCS12", path)
	}
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err != nil {
		return nil, fmt.Errorf("reading it as PKCS12: %w", err)
	}
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out, nil
}
