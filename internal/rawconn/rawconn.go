// Package rawconn is a bare Kafka connection for tests: it sends exactly the
// request a test builds, at the version it sets, and decodes the answer.
// Tests use it to send what no client library would (a retried sequence,
// an old epoch, garbage, a key the broker does not advertise) or to see
// what is not on the wire (acks=0). It is for tests only; one connection
// type for every package's tests.
package rawconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// IOTimeout bounds every read and write of a connection unless a method
// takes its own wait.
const IOTimeout = 10 * time.Second

// clientID is the client ID of every request; broker logs name it.
const clientID = "raw-test"

// Conn is one bare connection of one test. Its methods fail the test on
// an I/O error, except TryRecv, for tests where no answer is the outcome.
type Conn struct {
	// NC is the TCP connection, for tests that close or half-close it.
	NC net.Conn
	// Corr is the correlation ID of the last request sent; a test may set
	// it to choose the next one (Corr+1).
	Corr int32
	// Limit bounds the size of a response frame.
	Limit int32

	t testing.TB
}

// Dial connects to addr and closes the connection when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, IOTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, NC: nc, Limit: wire.DefaultMaxFrameBytes}
}

// Addr is the connection's local address, as the broker sees the client.
func (c *Conn) Addr() string { return c.NC.LocalAddr().String() }

// Write sends b as it is.
func (c *Conn) Write(b []byte) {
	c.t.Helper()
	c.NC.SetWriteDeadline(time.Now().Add(IOTimeout))
	if _, err := c.NC.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Frame builds the next request frame (size prefix included) for req.
func (c *Conn) Frame(req kmsg.Request) []byte {
	c.Corr++
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, c.Corr)
}

// Request sends req at its set version and returns the decoded response.
func (c *Conn) Request(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.Write(c.Frame(req))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.ReadResponse(resp)
	return resp
}

// ReadResponse reads one response frame, which must answer the last
// request sent, into resp, whose version is set.
func (c *Conn) ReadResponse(resp kmsg.Response) {
	c.t.Helper()
	if err := c.read(resp, c.Corr, IOTimeout); err != nil {
		c.t.Fatal(err)
	}
}

// Send writes req and returns its correlation ID, for tests that read the
// answer later (long polls) or expect none (acks=0).
func (c *Conn) Send(req kmsg.Request) int32 {
	c.t.Helper()
	c.Write(c.Frame(req))
	return c.Corr
}

// Recv reads the next response, which must answer req (sent with
// correlation ID corr), waiting at most d.
func (c *Conn) Recv(req kmsg.Request, corr int32, d time.Duration) kmsg.Response {
	c.t.Helper()
	resp, err := c.TryRecv(req, corr, d)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// TryRecv is Recv returning its error, for tests where a missing answer is
// the expected outcome. A read error is wrapped, so errors.Is finds io.EOF
// or os.ErrDeadlineExceeded.
func (c *Conn) TryRecv(req kmsg.Request, corr int32, d time.Duration) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := c.read(resp, corr, d); err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *Conn) read(resp kmsg.Response, corr int32, d time.Duration) error {
	c.NC.SetReadDeadline(time.Now().Add(d))
	body, err := wire.ReadFrame(c.NC, c.Limit)
	if err != nil {
		return fmt.Errorf("read %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	return DecodeResponse(body, corr, resp)
}

// ExpectClosed waits, bounded, for the broker to close the connection.
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	c.NC.SetReadDeadline(time.Now().Add(IOTimeout))
	var buf [64]byte
	for {
		n, err := c.NC.Read(buf[:])
		if n > 0 {
			c.t.Fatalf("got %d bytes instead of a closed connection: %x", n, buf[:n])
		}
		switch {
		case IsClosed(err):
			return
		case err != nil:
			c.t.Fatalf("connection not closed: %v", err)
		}
	}
}

// IsClosed reports whether a read failed because the broker closed or
// reset the connection, mid-frame included.
func IsClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// ExpectOpen proves the connection still works with an ApiVersions round
// trip; after it, every log line about earlier requests is written.
func (c *Conn) ExpectOpen() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	if resp := c.Request(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		c.t.Fatalf("ApiVersions after the bad request: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// DecodeResponse checks a response frame's correlation ID and decodes its
// body into resp, whose version is set. Flexible responses carry a tag
// section in the header, except ApiVersions, whose header stays v0 so any
// client can parse it.
func DecodeResponse(body []byte, corr int32, resp kmsg.Response) error {
	name := kmsg.NameForKey(resp.Key())
	if len(body) < 4 {
		return fmt.Errorf("%s: response of %d bytes", name, len(body))
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return fmt.Errorf("%s: response has correlation ID %d, want %d", name, got, corr)
	}
	body = body[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("%s: unexpected response header tags", name)
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("decode %s v%d response: %w", name, resp.GetVersion(), err)
	}
	return nil
}
