package broker_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/locktimer"
)

// apiVersions is a request any connection may send first.
func apiVersions() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	return req
}

// expectUntouched checks the broker has neither closed c nor sent on it,
// without sending anything that would count as activity.
func expectUntouched(t *testing.T, c *rawconn.Conn) {
	t.Helper()
	c.NC.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := c.NC.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, %v: want the connection open and silent", n, err)
	}
}

// Rule: connections-max-idle. On the manual clock a Kafka connection with
// no request for connections.max.idle.ms (Kafka's 10 minutes) is closed
// then and not before; each request starts its idle time again; a
// long-polling Fetch is not idleness, however long it waits; a kgo client
// whose connections were closed reconnects. On main nothing was ever
// closed.
func TestIdleKafkaConnectionsClosedOnTheClock(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	_, addr := startBroker(t, broker.Config{Clock: clock})
	admin := dialRaw(t, addr)
	admin.createTopics("t")

	active, idle, poller := rawconn.Dial(t, addr), rawconn.Dial(t, addr), rawconn.Dial(t, addr)
	active.Request(apiVersions())
	idle.Request(apiVersions())
	fetch := fetchReq("t", 0, 0)
	fetch.MaxWaitMillis, fetch.MinBytes = int32((time.Hour).Milliseconds()), 1
	corr := poller.Send(fetch)
	waitParked(t, clock)

	clock.Advance(10*time.Minute - time.Millisecond)
	expectUntouched(t, idle)
	active.ExpectOpen() // its idle time starts again here
	clock.Advance(time.Millisecond)
	idle.ExpectClosed()
	admin.ExpectClosed() // idle since it created the topic

	clock.Advance(10*time.Minute - 2*time.Millisecond)
	expectUntouched(t, active)
	clock.Advance(time.Millisecond)
	active.ExpectClosed()

	// Twenty minutes on, the parked Fetch still holds its connection;
	// at its hour it answers, and ten idle minutes later it closes.
	clock.Advance(41 * time.Minute)
	if resp := poller.Recv(fetch, corr, 10*time.Second).(*kmsg.FetchResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("parked fetch: %+v", resp.Topics[0].Partitions[0])
	}
	clock.Advance(10 * time.Minute)
	poller.ExpectClosed()

	// A client copes: its closed connections are dialled again.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 2 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(11 * time.Minute)
	}
}

// waitParked waits, bounded, until a Fetch has armed its wait on the
// clock: the retention loop's timer, the idle sweep's, and the fetch's.
func waitParked(t *testing.T, clock *locktimer.ManualClock) {
	t.Helper()
	waitPending(t, clock, 3)
}

// Rule: connections-max-idle. connections.max.idle.ms negative turns it
// off, and the failed-authentication delay must stay below it, as Kafka
// requires.
func TestIdleConfig(t *testing.T) {
	clock := locktimer.NewManualClock(time.Now())
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: map[string]string{"connections.max.idle.ms": "-1"}})
	c := rawconn.Dial(t, addr)
	c.Request(apiVersions())
	clock.Advance(24 * time.Hour)
	c.ExpectOpen()

	for _, props := range []map[string]string{
		{"connections.max.idle.ms": "100", "connection.failed.authentication.delay.ms": "100"},
		{"connections.max.idle.ms": "0"},
		{"max.connections.per.ip": "0"},
		{"max.connections": "-1"},
	} {
		if _, err := broker.New(broker.Config{Props: props}); err == nil {
			t.Errorf("New accepted %v", props)
		}
	}
}

// Rule: max-connections. At max.connections a listener takes no further
// connection until one closes: the next client waits unanswered, then is
// served. On main it was answered at once.
func TestMaxConnectionsPerListener(t *testing.T) {
	b, addr := startBroker(t, broker.Config{Props: map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
		"max.connections":                "1",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
	}})
	first := rawconn.Dial(t, addr)
	first.Request(apiVersions())
	waiting := rawconn.Dial(t, addr)
	req := apiVersions()
	corr := waiting.Send(req)
	if _, err := waiting.TryRecv(req, corr, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a second connection over max.connections 1 was answered: %v", err)
	}
	// The other listener has a cap of its own: one listener does not
	// starve another.
	other := rawconn.Dial(t, b.ListenerAddr("OTHER").String())
	other.Request(apiVersions())

	first.NC.Close()
	waiting.Recv(req, corr, 10*time.Second)
}

// Rule: max-connections-per-ip. A connection from an IP that already
// holds max.connections.per.ip is closed at once; on main it was served.
func TestMaxConnectionsPerIP(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"max.connections.per.ip": "2"}})
	a, b := rawconn.Dial(t, addr), rawconn.Dial(t, addr)
	a.Request(apiVersions())
	b.Request(apiVersions())
	extra := rawconn.Dial(t, addr)
	extra.ExpectClosed()
	a.ExpectOpen()
	b.NC.Close()
	// The freed count admits the next; the close is seen by the broker
	// asynchronously, so allow it a bounded number of tries.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := rawconn.Dial(t, addr)
		req := apiVersions()
		c.NC.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := c.NC.Write(c.Frame(req))
		if err == nil {
			if _, err = c.TryRecv(req, c.Corr, 10*time.Second); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a close, a new connection: %v", err)
		}
	}
}

// Rule: failed-authentication-delay. The answer to a wrong password
// arrives no sooner than connection.failed.authentication.delay.ms (real
// time: a lower bound), and the connection then closes; meanwhile other
// connections are served. A kgo client's refused login takes as long. On
// main the refusal came at once (3,740 guesses a second).
func TestFailedAuthenticationDelayed(t *testing.T) {
	const delay = 500 * time.Millisecond
	b, _ := startSASLBroker(t, locktimer.NewManualClock(time.Now()),
		map[string]string{"connection.failed.authentication.delay.ms": "500"})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()

	guesser, other := rawconn.Dial(t, addr), rawconn.Dial(t, addr)
	if hs := guesser.Request(handshakeReq("PLAIN", 1)).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", hs)
	}
	req := authReq([]byte("\x00alice\x00wrong"))
	began := time.Now()
	corr := guesser.Send(req)
	other.Request(apiVersions()) // not held behind the guesser's delay
	if _, err := guesser.TryRecv(req, corr, time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the refusal came before another connection's answer: %v", err)
	}
	resp := guesser.Recv(req, corr, 10*time.Second).(*kmsg.SASLAuthenticateResponse)
	if waited := time.Since(began); waited < delay || resp.ErrorCode == 0 {
		t.Fatalf("refusal %+v after %v, want an error after at least %v", resp, waited, delay)
	}
	guesser.ExpectClosed()

	for name, mech := range map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(),
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		err = cl.Ping(ctx)
		waited := time.Since(began)
		cancel()
		cl.Close()
		if err == nil || waited < delay {
			t.Errorf("%s with a wrong password: %v after %v, want a refusal after at least %v", name, err, waited, delay)
		}
	}
}
