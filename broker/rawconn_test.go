package broker_test

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// Some tests speak Kafka over a plain TCP connection (internal/rawconn):
// to send what no client library would, or to see what is not on the
// wire. rawConn is that connection, one per test, under the lower-case
// names these tests used before the connection moved to internal/rawconn;
// the forwarders below keep their many call sites unchanged.

// ioTimeout bounds every read and write of a raw connection.
const ioTimeout = rawconn.IOTimeout

type rawConn struct {
	*rawconn.Conn
	t  testing.TB
	nc net.Conn // Conn.NC, for tests that close or inspect the socket
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c := rawconn.Dial(t, addr)
	return &rawConn{Conn: c, t: t, nc: c.NC}
}

func (c *rawConn) addr() string                  { return c.Addr() }
func (c *rawConn) frame(req kmsg.Request) []byte { return c.Frame(req) }

func (c *rawConn) write(b []byte) { c.t.Helper(); c.Write(b) }

func (c *rawConn) request(req kmsg.Request) kmsg.Response { c.t.Helper(); return c.Request(req) }

func (c *rawConn) readResponse(resp kmsg.Response) { c.t.Helper(); c.ReadResponse(resp) }

func (c *rawConn) expectClosed() { c.t.Helper(); c.ExpectClosed() }

func (c *rawConn) expectOpen() { c.t.Helper(); c.ExpectOpen() }

func (c *rawConn) send(req kmsg.Request) int32 { c.t.Helper(); return c.Send(req) }

func (c *rawConn) recv(req kmsg.Request, corr int32, d time.Duration) kmsg.Response {
	c.t.Helper()
	return c.Recv(req, corr, d)
}

func (c *rawConn) tryRecv(req kmsg.Request, corr int32, d time.Duration) (kmsg.Response, error) {
	return c.TryRecv(req, corr, d)
}
