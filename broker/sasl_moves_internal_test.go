package broker

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/locktimer"
)

// countingConn counts the writes of a connection under test.
type countingConn struct {
	saslFuzzConn
	writes *int
}

func (c countingConn) Write(p []byte) (int, error) { *c.writes++; return len(p), nil }

// Rules: sasl-first, sasl-authenticate, sasl-not-here, sasl-reauth. Every
// cell of saslMoves, through the gate and the handlers: whether the
// connection stays open and whether the request is answered.
func TestSASLMovesEveryCell(t *testing.T) {
	type outcome struct{ open, answered bool }
	var (
		served  = outcome{true, true}
		refused = outcome{false, true}
		closed  = outcome{false, false}
	)
	events := map[saslEvent]kmsg.Request{}
	{
		v := kmsg.NewPtrApiVersionsRequest()
		v.Version = 3
		events[evAPIVersions] = v
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		events[evHandshake] = hs
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.Version, a.SASLAuthBytes = 2, []byte("\x00alice\x00alice-secret")
		events[evAuthenticate] = a
		m := kmsg.NewPtrMetadataRequest()
		m.Version = 12
		events[evOther] = m
	}
	want := map[saslState][numSASLEvents]outcome{
		saslInitial:      {evAPIVersions: served, evHandshake: served, evAuthenticate: closed, evOther: closed},
		saslVersionsDone: {evAPIVersions: closed, evHandshake: served, evAuthenticate: closed, evOther: closed},
		saslReauth:       {evAPIVersions: closed, evHandshake: served, evAuthenticate: closed, evOther: closed},
		saslAuthenticate: {evAPIVersions: refused, evHandshake: refused, evAuthenticate: served, evOther: refused},
		saslBadMechanism: {evAPIVersions: closed, evHandshake: closed, evAuthenticate: closed, evOther: closed},
		// Without a session lifetime: SaslHandshake and SaslAuthenticate
		// are answered ILLEGAL_SASL_STATE and the connection stays.
		saslComplete: {evAPIVersions: served, evHandshake: served, evAuthenticate: served, evOther: served},
		saslFailed:   {evAPIVersions: closed, evHandshake: closed, evAuthenticate: closed, evOther: closed},
	}
	for state := saslInitial; state < numSASLStates; state++ {
		if state == saslRawToken {
			continue // its frames are not requests
		}
		for ev := range numSASLEvents {
			b, err := New(Config{Listen: "127.0.0.1:0", Clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)),
				Logger:    slog.New(slog.DiscardHandler),
				SASLUsers: []SASLUser{{Name: "alice", Password: "alice-secret"}},
				Props: map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
					"connection.failed.authentication.delay.ms": "0"}}) // moves, not time
			if err != nil {
				t.Fatal(err)
			}
			b.endpoints.Store(&[][]endpoint{{{host: "127.0.0.1", port: 9092}}})
			var writes int
			c := newConn(b, &listener{name: "SASL_PLAINTEXT", sasl: true}, countingConn{writes: &writes})
			s := c.sasl
			s.state = state
			switch state {
			case saslReauth, saslBadMechanism:
				s.User, s.Mech, s.Reauthing = "alice", "PLAIN", true
				c.principal = "User:alice"
			case saslComplete:
				s.User, s.Mech = "alice", "PLAIN"
				c.principal = "User:alice"
			case saslAuthenticate:
				s.Mech, s.Exchange = "PLAIN", b.authn.NewExchange("PLAIN")
			}
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t")).AppendRequest(nil, events[ev], 1)[4:]
			open := c.handleFrame(frame)
			if got := (outcome{open, writes > 0}); got != want[state][ev] {
				t.Errorf("state %v, %s: open %v answered %v; want %+v", state, kmsg.NameForKey(events[ev].Key()),
					got.open, got.answered, want[state][ev])
			}
		}
	}
}
