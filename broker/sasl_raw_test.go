package broker_test

import (
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/locktimer"
)

// handshakeReq is a SaslHandshake for mech at version v.
func handshakeReq(mech string, v int16) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = v, mech
	return req
}

// authReq is a SaslAuthenticate v2 carrying msg.
func authReq(msg []byte) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, msg
	return req
}

// plainLogin authenticates c with PLAIN through SaslHandshake v1 and one
// SaslAuthenticate v2, and returns that answer.
func plainLogin(t *testing.T, c *rawconn.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := c.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse)
	if hs.ErrorCode != 0 {
		t.Fatalf("handshake: error %d", hs.ErrorCode)
	}
	return c.Request(authReq([]byte("\x00" + user + "\x00" + pass))).(*kmsg.SASLAuthenticateResponse)
}

// metadataReq asks for no topic: the cheapest request that is not a SASL one.
func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{}
	return req
}

// expectServed proves the broker still serves a new SASL connection.
func expectServed(t *testing.T, addr string) {
	t.Helper()
	c := rawconn.Dial(t, addr)
	if resp := plainLogin(t, c, "alice", "alice-secret"); resp.ErrorCode != 0 {
		t.Fatalf("a fresh connection failed to authenticate: %d", resp.ErrorCode)
	}
	c.Request(metadataReq())
}

// Rules: sasl-first, sasl-handshake, sasl-authenticate, sasl-not-here, sasl-max-receive. Each bad
// conversation closes its own connection, with or without Kafka's answer, and the broker goes on
// serving new ones.
func TestSASLStateMachineRaw(t *testing.T) {
	b, logs := startSASLBroker(t, nil, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()

	t.Run("request before handshake", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Send(metadataReq())
		c.ExpectClosed()
		// The line is written before the connection closes.
		if n := logs.lines("request not allowed before SASL authentication"); n != 1 {
			t.Fatalf("%d log lines", n)
		}
	})
	t.Run("SASL bytes before handshake", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		msg := []byte("\x00alice\x00alice-secret")
		c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
		c.Write(msg)
		c.ExpectClosed()
	})
	t.Run("ApiVersions twice", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.ExpectOpen()
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		c.Send(req)
		c.ExpectClosed()
	})
	t.Run("ApiVersions then handshake", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.ExpectOpen()
		if resp := plainLogin(t, c, "alice", "alice-secret"); resp.ErrorCode != 0 {
			t.Fatalf("error %d", resp.ErrorCode)
		}
		c.Request(metadataReq())
		if p := broker.Principals(b); !strings.Contains(strings.Join(p, ","), "User:alice") {
			t.Errorf("principals %v", p)
		}
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		resp := c.Request(handshakeReq("GSSAPI", 1)).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Fatalf("got %+v", resp)
		}
		c.ExpectClosed()
	})
	t.Run("wrong password", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		resp := plainLogin(t, c, "alice", "nope")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("got %+v", resp)
		}
		c.ExpectClosed()
	})
	t.Run("other request during authenticate", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("PLAIN", 1))
		resp := c.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("got %+v", resp)
		}
		c.ExpectClosed()
	})
	t.Run("after authentication", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		if resp := plainLogin(t, c, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("got %+v", resp)
		}
		again := c.Request(authReq([]byte("\x00alice\x00alice-secret"))).(*kmsg.SASLAuthenticateResponse)
		if again.ErrorCode != kerr.IllegalSaslState.Code || again.ErrorMessage == nil ||
			*again.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
			t.Fatalf("got %+v", again)
		}
		// Without a session lifetime there is no re-authentication.
		hs := c.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse)
		if hs.ErrorCode != kerr.IllegalSaslState.Code || len(hs.SupportedMechanisms) != 0 {
			t.Fatalf("got %+v", hs)
		}
		c.Request(metadataReq())
	})
	t.Run("on a PLAINTEXT listener", func(t *testing.T) {
		c := rawconn.Dial(t, b.ListenerAddr("PLAINTEXT").String())
		hs := c.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse)
		if hs.ErrorCode != kerr.IllegalSaslState.Code || len(hs.SupportedMechanisms) != 0 {
			t.Fatalf("got %+v", hs)
		}
		c.ExpectOpen()
	})
	t.Run("v0 raw tokens", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		if hs := c.Request(handshakeReq("PLAIN", 0)).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("got %+v", hs)
		}
		msg := []byte("\x00alice\x00alice-secret")
		c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...))
		var size [4]byte
		c.NC.SetReadDeadline(time.Now().Add(rawconn.IOTimeout))
		if _, err := io.ReadFull(c.NC, size[:]); err != nil || size != [4]byte{} {
			t.Fatalf("raw answer %x, %v; want an empty one", size, err)
		}
		c.Request(metadataReq())
	})
	t.Run("v0 raw wrong password", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("PLAIN", 0))
		msg := []byte("\x00alice\x00nope")
		c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...))
		c.ExpectClosed()
	})
	t.Run("oversized token", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("PLAIN", 1))
		// One byte over sasl.server.max.receive.size: refused from its
		// size, before it is read.
		c.Write(binary.BigEndian.AppendUint32(nil, 524288+1))
		c.ExpectClosed()
	})
	t.Run("truncated SCRAM exchange", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("SCRAM-SHA-256", 1))
		client, err := scram.SHA256.NewClient("alice", "alice-secret", "")
		if err != nil {
			t.Fatal(err)
		}
		conv := client.NewConversation()
		first, _ := conv.Step("")
		resp := c.Request(authReq([]byte(first))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 || !strings.HasPrefix(string(resp.SASLAuthBytes), "r=") {
			t.Fatalf("server first message: %+v", resp)
		}
		// Half of the final message's frame, then hang up.
		final, _ := conv.Step(string(resp.SASLAuthBytes))
		frame := c.Frame(authReq([]byte(final)))
		c.Write(frame[:len(frame)/2])
		c.NC.Close()
		waitLog(t, logs, "frame cut short", 1)
	})
	t.Run("SCRAM tampered nonce", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("SCRAM-SHA-512", 1))
		client, _ := scram.SHA512.NewClient("alice", "alice-secret", "")
		conv := client.NewConversation()
		first, _ := conv.Step("")
		resp := c.Request(authReq([]byte(first))).(*kmsg.SASLAuthenticateResponse)
		final, _ := conv.Step(string(resp.SASLAuthBytes))
		final = strings.Replace(final, ",r=", ",r=x", 1)
		resp = c.Request(authReq([]byte(final))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" {
			t.Fatalf("got %+v", resp)
		}
		c.ExpectClosed()
	})
	t.Run("SCRAM channel binding", func(t *testing.T) {
		c := rawconn.Dial(t, addr)
		c.Request(handshakeReq("SCRAM-SHA-256", 1))
		resp := c.Request(authReq([]byte("y,,n=alice,r=abcdefgh"))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("got %+v", resp)
		}
		c.ExpectClosed()
	})
	expectServed(t, addr)
}

// Rules: sasl-reauth, sasl-principal. On the manual clock: a session ends at
// connections.max.reauth.ms, a re-authentication with the same user renews
// it, one with another user or mechanism fails, and one within a second of
// the last is refused.
func TestSASLReauthenticationRaw(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	b, logs := startSASLBroker(t, clock, map[string]string{"connections.max.reauth.ms": "60000"})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()

	expired := rawconn.Dial(t, addr)
	if resp := plainLogin(t, expired, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("got %+v", resp)
	}
	renewed := rawconn.Dial(t, addr)
	plainLogin(t, renewed, "alice", "alice-secret")
	clock.Advance(30 * time.Second)
	if resp := plainLogin(t, renewed, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("re-authentication: %+v", resp)
	}
	// Within a second of the last re-authentication: not one.
	if hs := renewed.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("early re-authentication: %+v", hs)
	}
	clock.Advance(45 * time.Second) // 75 s after the first, 45 s after the renewal
	renewed.Request(metadataReq())
	expired.Send(metadataReq())
	expired.ExpectClosed()
	if n := logs.lines("SASL session expired without re-authentication"); n != 1 {
		t.Fatalf("%d log lines say the session expired", n)
	}

	other := rawconn.Dial(t, addr)
	plainLogin(t, other, "alice", "alice-secret")
	clock.Advance(2 * time.Second)
	if resp := plainLogin(t, other, "bob", "bob-secret"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		resp.ErrorMessage == nil || *resp.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Fatalf("re-authentication as bob: %+v", resp)
	}
	other.ExpectClosed()

	mech := rawconn.Dial(t, addr)
	plainLogin(t, mech, "alice", "alice-secret")
	clock.Advance(2 * time.Second)
	if hs := mech.Request(handshakeReq("SCRAM-SHA-256", 1)).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("handshake of another mechanism: %+v", hs)
	}
	mech.Send(authReq([]byte("n,,n=alice,r=abc")))
	mech.ExpectClosed()
	if n := logs.lines("is not supported for re-authentication of mechanism 'PLAIN'"); n != 1 {
		t.Fatalf("%d log lines give the mechanism refused", n)
	}
}
