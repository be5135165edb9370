package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/locktimer"
)

// startSASLBroker starts a broker with PLAINTEXT, SASL_PLAINTEXT and
// SASL_SSL listeners, the users alice (password alice-secret) and bob
// (bob-secret), the HTTP
// server and clock as its clock (nil: the real one).
func startSASLBroker(t *testing.T, clock locktimer.Clock, props map[string]string) (*broker.Broker, *lockedLog) {
	t.Helper()
	logs := &lockedLog{}
	if props == nil {
		props = map[string]string{}
	}
	props["listeners"] = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
	b, _ := startBroker(t, broker.Config{
		HTTP:      "127.0.0.1:0",
		Props:     props,
		Clock:     clock,
		SASLUsers: []broker.SASLUser{{Name: "alice", Password: "alice-secret"}, {Name: "bob", Password: "bob-secret"}},
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	return b, logs
}

// unsecuredJWS is an OAUTHBEARER token as Kafka's unsecured login module
// makes one: alg none, an empty signature.
func unsecuredJWS(claims string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString([]byte(claims)) + "."
}

// gather reads b's registry into families by name.
func gather(t *testing.T, b *broker.Broker) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily)
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// Rules: sasl-listeners, sasl-users, sasl-mechanisms, sasl-principal, sasl-metrics. Every mechanism
// authenticates a kgo client over SASL_PLAINTEXT and SASL_SSL, which then produces and consumes.
func TestSASLKgoMechanisms(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, _ := startSASLBroker(t, clock, map[string]string{"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"})
	pool := fetchCA(t, b)
	token := unsecuredJWS(fmt.Sprintf(`{"sub":"alice","iat":%d,"exp":%d,"scope":"test"}`,
		clock.Now().Unix(), clock.Now().Add(time.Hour).Unix()))
	mechs := map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		"OAUTHBEARER":   oauth.Auth{Token: token}.AsMechanism(),
	}
	for name, mech := range mechs {
		t.Run(name, func(t *testing.T) {
			produceConsumeOpts(t, b.ListenerAddr("SASL_PLAINTEXT").String(), kgo.SASL(mech))
			produceConsumeOpts(t, b.ListenerAddr("SASL_SSL").String(), kgo.SASL(mech),
				kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"}))
		})
	}
	fams := gather(t, b)
	for name := range mechs {
		if n := metricValue(t, fams, "sharebroker_sasl_authentications_total", map[string]string{"mechanism": name, "result": "success"}); n < 2 {
			t.Errorf("%s: %v successful authentications counted, want 2 or more", name, n)
		}
	}
}

// produceConsumeOpts produces three records to a new topic with a kgo
// client made with opts and consumes them back.
func produceConsumeOpts(t *testing.T, addr string, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topicSeq.Lock()
	topicSeq.n++
	topic := fmt.Sprintf("sec-%d", topicSeq.n)
	topicSeq.Unlock()
	opts = append(opts, kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := []string{"a", "b", "c"}
	for _, v := range want {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	var got []string
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q, then %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

// Rules: sasl-failure-closes, sasl-metrics. A wrong password, an unknown user and an expired token each
// fail a kgo client within two seconds with SASL_AUTHENTICATION_FAILED.
func TestSASLWrongCredentialsFailFast(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, logs := startSASLBroker(t, clock, map[string]string{"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"})
	expired := unsecuredJWS(fmt.Sprintf(`{"sub":"alice","exp":%d}`, clock.Now().Add(-time.Minute).Unix()))
	for name, mech := range map[string]sasl.Mechanism{
		"PLAIN":               plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(),
		"PLAIN unknown user":  plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256":       scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(),
		"SCRAM-SHA-512":       scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(),
		"SCRAM unknown user":  scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism(),
		"OAUTHBEARER expired": oauth.Auth{Token: expired}.AsMechanism(),
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()), kgo.SASL(mech))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err = cl.Ping(ctx)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("failing took %v", took)
			}
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
	if n := logs.lines("alice-secret") + logs.lines("wrong"); n != 0 {
		t.Errorf("%d log lines hold a password", n)
	}
	fams := gather(t, b)
	if n := metricValue(t, fams, "sharebroker_sasl_authentications_total", map[string]string{"mechanism": "PLAIN", "result": "failure"}); n < 2 {
		t.Errorf("%v PLAIN failures counted, want 2 or more", n)
	}
}

// Rule: sasl-reauth. kgo re-authenticates when SaslAuthenticate reports a
// session lifetime: with a 1 s lifetime it re-authenticates before each
// request after the first, and the broker, whose manual clock moved past
// the session's end, accepts it instead of closing the connection.
func TestSASLKgoReauthenticates(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, logs := startSASLBroker(t, clock, map[string]string{"connections.max.reauth.ms": "1000"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("reauth"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		clock.Advance(2 * time.Second)
	}
	if n := logs.lines("reauthentication=true"); n < 2 {
		t.Fatalf("%d re-authentications logged, want 2 or more", n)
	}
	if n := logs.lines("SASL session expired"); n != 0 {
		t.Fatalf("%d connections closed for an expired session", n)
	}
}

// Rule: sasl-reauth, oauthbearer-unsecured. An OAUTHBEARER session ends at
// the token's exp even with connections.max.reauth.ms off.
func TestSASLOAuthTokenExpiryEndsSession(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, _ := startSASLBroker(t, clock, map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER"})
	c := rawconn.Dial(t, b.ListenerAddr("SASL_PLAINTEXT").String())
	if hs := c.Request(handshakeReq("OAUTHBEARER", 1)).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", hs)
	}
	token := unsecuredJWS(fmt.Sprintf(`{"sub":"carol","exp":%d}`, clock.Now().Add(10*time.Minute).Unix()))
	resp := c.Request(authReq([]byte("n,,\x01auth=Bearer " + token + "\x01\x01"))).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 9*60*1000 || resp.SessionLifetimeMillis > 10*60*1000 {
		t.Fatalf("got %+v", resp)
	}
	if p := broker.Principals(b); !slices.Contains(p, "User:carol") {
		t.Fatalf("principals %v", p)
	}
	c.Request(metadataReq())
	clock.Advance(11 * time.Minute)
	c.Send(metadataReq())
	c.ExpectClosed()
}

// Rule: oauthbearer-unsecured. A token that does not validate gets the
// RFC 7628 error challenge; the client's %x01 then fails the exchange
// with it.
func TestSASLOAuthInvalidTokenChallenge(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, logs := startSASLBroker(t, clock, map[string]string{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"})
	for name, token := range map[string]string{
		"signed":       unsecuredJWS(`{"sub":"a","exp":99999999999}`) + "c2ln",
		"no exp":       unsecuredJWS(`{"sub":"a"}`),
		"no sub":       unsecuredJWS(`{"exp":99999999999}`),
		"future iat":   unsecuredJWS(fmt.Sprintf(`{"sub":"a","exp":99999999999,"iat":%d}`, clock.Now().Add(time.Hour).Unix())),
		"exp not num":  unsecuredJWS(`{"sub":"a","exp":"soon"}`),
		"scope number": unsecuredJWS(`{"sub":"a","exp":99999999999,"scope":7}`),
		"alg HS256": base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." +
			base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"a","exp":99999999999}`)) + ".",
		"bad base64": "a.b.",
		"two parts":  "eyJhbGciOiJub25lIn0.e30",
	} {
		t.Run(name, func(t *testing.T) {
			c := rawconn.Dial(t, b.ListenerAddr("SASL_PLAINTEXT").String())
			c.Request(handshakeReq("OAUTHBEARER", 1))
			resp := c.Request(authReq([]byte("n,,\x01auth=Bearer " + token + "\x01\x01"))).(*kmsg.SASLAuthenticateResponse)
			if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
				t.Fatalf("got %+v", resp)
			}
			resp = c.Request(authReq([]byte{1})).(*kmsg.SASLAuthenticateResponse)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != `{"status":"invalid_token"}` {
				t.Fatalf("got %+v", resp)
			}
			c.ExpectClosed()
		})
	}
	if n := logs.lines("No expiration time in JWT"); n != 1 {
		t.Errorf("%d log lines give the reason of the token without exp", n)
	}
}

// Rule: sasl-principal. On SASL_SSL with a client certificate the
// principal is the SASL user, not the certificate's DN.
func TestSASLSSLPrincipalIsSASLUser(t *testing.T) {
	clientCA := newTestCA(t)
	carl, _, _ := clientCA.issue(t, 2, pkix.Name{CommonName: "carl"}, false)
	b, _ := startBroker(t, broker.Config{
		HTTP:      "127.0.0.1:0",
		TLS:       broker.TLSConfig{ClientCAFile: writeFile(t, "client-ca.pem", clientCA.pem)},
		SASLUsers: []broker.SASLUser{{Name: "alice", Password: "alice-secret"}},
		Props:     map[string]string{"listeners": "SASL_SSL://127.0.0.1:0", "ssl.client.auth": "required"},
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL_SSL").String()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: fetchCA(t, b), ServerName: "127.0.0.1", Certificates: []tls.Certificate{carl}}),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if p := broker.Principals(b); len(p) != 1 || p[0] != "User:alice" {
		t.Fatalf("principals %v, want [User:alice]", p)
	}
}

// Rules: sasl-v0-raw, sasl-handshake. sarama speaks SaslHandshake v0 (raw
// PLAIN token, no SaslAuthenticate) and v1; both produce, and a wrong
// password fails.
func TestSASLSaramaHandshakeVersions(t *testing.T) {
	b, _ := startSASLBroker(t, nil, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	for _, v := range []int16{sarama.SASLHandshakeV0, sarama.SASLHandshakeV1} {
		for _, pass := range []string{"alice-secret", "wrong"} {
			cfg := sarama.NewConfig()
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.Version = v
			// sarama's v0 flow is the pre-KIP-35 one: no ApiVersions first.
			cfg.ApiVersionsRequest = v != sarama.SASLHandshakeV0
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", pass
			cfg.Producer.Return.Successes = true
			cfg.Metadata.Retry.Max = 0
			prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if pass == "wrong" {
				if err == nil {
					prod.Close()
					t.Fatalf("handshake v%d: a wrong password was accepted", v)
				}
				continue
			}
			if err != nil {
				t.Fatalf("handshake v%d: %v", v, err)
			}
			_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: fmt.Sprintf("sarama-sasl-v%d", v), Value: sarama.StringEncoder("x")})
			prod.Close()
			if err != nil {
				t.Fatalf("handshake v%d: produce: %v", v, err)
			}
		}
	}
}
