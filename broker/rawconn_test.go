package broker_test

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

// Some tests speak Kafka over a plain TCP connection: to send what no client
// library would (a retried sequence, an old epoch, garbage), or to see what
// is not on the wire (acks=0). rawConn is that connection, one per test.

// ioTimeout bounds every read and write of a raw connection.
const ioTimeout = 10 * time.Second

// rawConn is a bare Kafka connection for sending exactly the bytes a test
// wants and reading the answer.
type rawConn struct {
	t     testing.TB
	nc    net.Conn
	corr  int32
	limit int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, limit: wire.DefaultMaxFrameBytes}
}

func (c *rawConn) addr() string { return c.nc.LocalAddr().String() }

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// frame builds a request frame (size prefix included) for req.
func (c *rawConn) frame(req kmsg.Request) []byte {
	c.corr++
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test")).AppendRequest(nil, req, c.corr)
}

// request sends req at its set version and returns the decoded response.
func (c *rawConn) request(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.write(c.frame(req))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.readResponse(resp)
	return resp
}

// readResponse reads one response frame, which must answer the last
// request sent, into resp, whose version is set.
func (c *rawConn) readResponse(resp kmsg.Response) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	body, err := wire.ReadFrame(c.nc, c.limit)
	if err != nil {
		c.t.Fatalf("reading %s response: %v", kmsg.NameForKey(resp.Key()), err)
	}
	if err := decodeResponse(body, c.corr, resp); err != nil {
		c.t.Fatal(err)
	}
}

// expectClosed waits, bounded, for the broker to close the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var buf [64]byte
	for {
		n, err := c.nc.Read(buf[:])
		if n > 0 {
			c.t.Fatalf("got %d bytes instead of a closed connection: %x", n, buf[:n])
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			return
		case err != nil:
			c.t.Fatalf("connection not closed: %v", err)
		}
	}
}

// expectOpen proves the connection still works with an ApiVersions
// round trip; after it, every log line about earlier requests is written.
func (c *rawConn) expectOpen() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	if resp := c.request(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		c.t.Fatalf("ApiVersions after the bad request: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// send writes req and returns its correlation ID, for tests that read the
// answer later (long polls) or expect none (acks=0).
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.write(c.frame(req))
	return c.corr
}

// recv reads the next response, which must answer req (sent with
// correlation ID corr), waiting at most d.
func (c *rawConn) recv(req kmsg.Request, corr int32, d time.Duration) kmsg.Response {
	c.t.Helper()
	resp, err := c.tryRecv(req, corr, d)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// tryRecv is recv returning its error, for tests where a missing answer is
// the expected outcome.
func (c *rawConn) tryRecv(req kmsg.Request, corr int32, d time.Duration) (kmsg.Response, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	body, err := wire.ReadFrame(c.nc, c.limit)
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := decodeResponse(body, corr, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// decodeResponse checks a response frame's correlation ID and decodes its
// body into resp, whose version is set. Flexible responses carry a tag
// section in the header, except ApiVersions, whose header stays v0 so any
// client can parse it.
func decodeResponse(body []byte, corr int32, resp kmsg.Response) error {
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
