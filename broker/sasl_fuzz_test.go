package broker

import (
	"encoding/binary"
	"log/slog"
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/locktimer"
)

// saslFuzzConn is the network side of the fuzzed connection: answers are
// dropped, nothing is read (frames come from the input).
type saslFuzzConn struct{ net.Conn }

func (saslFuzzConn) Write(p []byte) (int, error)      { return len(p), nil }
func (saslFuzzConn) SetWriteDeadline(time.Time) error { return nil }
func (saslFuzzConn) Close() error                     { return nil }
func (saslFuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 50000}
}

// A SASL fuzz input is a run of steps on one connection of a SASL listener
// (users alice/alice-secret; every mechanism enabled; a 60 s session
// lifetime). Each step is
//
//	op 1 byte: op%8 == 7 advances the clock by the next byte × 100 ms;
//	   otherwise a frame follows
//	length 2 bytes, big endian, then the frame (without its size prefix):
//	   a Kafka request, or a raw mechanism message in the v0 flow
const saslFuzzAdvance = 7

// saslFrame is the frame of req without its size prefix.
func saslFrame(req kmsg.Request) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)
	return f[4:]
}

// saslSeed encodes steps: a []byte is a frame, a time.Duration an advance.
func saslSeed(steps ...any) []byte {
	var out []byte
	for _, s := range steps {
		switch s := s.(type) {
		case []byte:
			out = append(out, 0)
			out = binary.BigEndian.AppendUint16(out, uint16(len(s)))
			out = append(out, s...)
		case time.Duration:
			out = append(out, saslFuzzAdvance, byte(s/(100*time.Millisecond)))
		}
	}
	return out
}

// FuzzSASL drives the SASL state machine (sasl.go) with frames in any
// order and checks its invariants (saslCheck) after every step; no
// handler may panic.
func FuzzSASL(f *testing.F) {
	hs := func(mech string, v int16) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, mech
		return saslFrame(r)
	}
	authMsg := func(msg string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = 2, []byte(msg)
		return saslFrame(r)
	}
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 3
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	plain := "\x00alice\x00alice-secret"
	token := "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6MTcwMDAwMzYwMH0." // sub alice, exp start+1h
	f.Add(saslSeed(saslFrame(versions), hs("PLAIN", 1), authMsg(plain), saslFrame(meta)))
	f.Add(saslSeed(hs("PLAIN", 0), []byte(plain), saslFrame(meta)))
	f.Add(saslSeed(hs("PLAIN", 1), authMsg(plain), 200*100*time.Millisecond, hs("PLAIN", 1), authMsg(plain), saslFrame(meta)))
	f.Add(saslSeed(hs("PLAIN", 1), authMsg(plain), 250*100*time.Millisecond, 250*100*time.Millisecond, 250*100*time.Millisecond, saslFrame(meta)))
	f.Add(saslSeed(hs("PLAIN", 1), authMsg(plain), 20*100*time.Millisecond, hs("SCRAM-SHA-256", 1), authMsg("n,,n=alice,r=abc")))
	f.Add(saslSeed(hs("SCRAM-SHA-256", 1), authMsg("n,,n=alice,r=abcdef"), authMsg("c=biws,r=abcdef,p=AAAA")))
	f.Add(saslSeed(hs("OAUTHBEARER", 1), authMsg("n,,\x01auth=Bearer "+token+"\x01\x01"), saslFrame(meta)))
	f.Add(saslSeed(hs("OAUTHBEARER", 1), authMsg("n,,\x01auth=Bearer a.b.\x01\x01"), authMsg("\x01")))
	f.Add(saslSeed(hs("GSSAPI", 1)))
	f.Add(saslSeed(saslFrame(meta)))
	// Salting alice's password is most of a broker's start: do it once
	// and give each input a copy.
	creds, err := auth.NewCredentials([]SASLUser{{Name: "alice", Password: "alice-secret"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
		b, err := New(Config{Listen: "127.0.0.1:0", Clock: clock, Logger: slog.New(slog.DiscardHandler),
			Props: map[string]string{
				"listeners":                 "SASL_PLAINTEXT://127.0.0.1:0",
				"sasl.enabled.mechanisms":   "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
				"connections.max.reauth.ms": "60000",
				// No real-time wait per failed exchange: it would
				// only slow the fuzzer (failed-authentication-delay).
				"connection.failed.authentication.delay.ms": "0",
			}})
		if err != nil {
			t.Fatal(err)
		}
		b.authn.Credentials = creds.Clone()
		// Never started: the endpoints Start would set, for Metadata.
		b.endpoints.Store(&[][]endpoint{{{host: "127.0.0.1", port: 9092}}})
		c := newConn(b, &listener{name: "SASL_PLAINTEXT", sasl: true}, saslFuzzConn{})
		for step := 0; len(in) > 0 && step < 16; step++ {
			op := in[0]
			in = in[1:]
			if op%8 == saslFuzzAdvance {
				if len(in) == 0 {
					return
				}
				clock.Advance(time.Duration(in[0]) * 100 * time.Millisecond)
				in = in[1:]
				continue
			}
			if len(in) < 2 {
				return
			}
			n := min(int(binary.BigEndian.Uint16(in)), len(in)-2)
			frame := in[2 : 2+n]
			in = in[2+n:]
			if int32(len(frame)) > c.maxFrame() {
				return // the read loop refuses it before it is read
			}
			var goOn bool
			if c.sasl.state == saslRawToken {
				goOn = c.rawSASLToken(frame)
			} else {
				goOn = c.handleFrame(frame)
			}
			if err := c.saslCheck(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			var m dto.Metric
			if b.metrics.Panics().Write(&m); m.GetCounter().GetValue() != 0 {
				t.Fatalf("step %d: a handler panicked", step)
			}
			if !goOn {
				return
			}
		}
	})
}
