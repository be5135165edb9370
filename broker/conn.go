package broker

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/internal/connquota"
	"github.com/sharebroker/sharebroker/metrics"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

// writeTimeout bounds one response write; a client that stops reading is
// disconnected rather than holding its goroutine forever.
const writeTimeout = 30 * time.Second

// keepResponseBuf is the largest response buffer a connection keeps for
// reuse; a bigger one (a large fetch, Metadata of many topics) is shared
// with the other connections after the write (wire.TakeResponseBuffer).
const keepResponseBuf = 1 << 20

// keepFrameBuf is the largest request buffer a connection keeps for reuse.
const keepFrameBuf = 2 << 20

// conn is one client connection. Its goroutine reads a request, handles it
// and writes the response before reading the next, so responses leave in
// request order (clients rely on it) and a long-polling fetch holds only its
// own connection.
type conn struct {
	b   *Broker
	l   *listener
	nc  net.Conn
	log *slog.Logger
	buf []byte // response buffer, reused
	// frame is the request buffer, reused: a request's byte fields (record
	// batches, group metadata) alias it, so a handler must copy any bytes
	// it keeps after it returns.
	frame []byte
	segs  [][]byte // write segments of a spliced Fetch response, reused
	// principal is who the client is (Kafka's KafkaPrincipal as a string):
	// User:ANONYMOUS, on an SSL listener with a client certificate User:
	// and its subject DN, on a SASL listener User: and the authenticated
	// name. Set by the TLS handshake before the first request, or by SASL
	// authentication before any request other than ApiVersions and the
	// SASL ones; the authorizer reads it (authorize.go). Written under
	// Broker.mu; read without it on the connection's own goroutine.
	principal string
	// sasl is the SASL conversation of a SASL listener's connection; nil
	// on other listeners.
	sasl *saslConn
	// closeAfterSend: the handler's answer is the last one (a failed SASL
	// exchange).
	closeAfterSend bool
	// host is the client's IP as ACLs name hosts; clientIP fills it.
	host string
	// quota is the connection as its listener's connquota counts it: it
	// is marked busy while a request is handled, idle after (nil for a
	// connection a test made without a listener).
	quota *connquota.Conn
	// readBuf holds the record bytes Fetch and ShareFetch copy out of
	// segment files (storage.ReadBuffer; with a data directory only).
	// Reset before each request is handled: the connection answers one
	// request at a time, so the previous answer is written by then.
	readBuf storage.ReadBuffer
	// software is the client's software name and version, as
	// ApiVersions v3+ named them (telemetry.go).
	software [2]string
}

func newConn(b *Broker, l *listener, nc net.Conn) *conn {
	c := &conn{b: b, l: l, nc: nc, log: b.log.With(attrConn, nc.RemoteAddr().String()), principal: auth.AnonymousPrincipal}
	if l.sasl {
		c.sasl = &saslConn{state: saslInitial}
	}
	return c
}

func (c *conn) serve() {
	defer c.b.forgetConn(c)
	// Its share sessions end with it and their members' records go back
	// now, not when their locks expire (row 8).
	defer func() { c.b.shareServing.OwnerClosed(c, c.b.clock.Now()) }()
	// Kafka forgets the client instance a connection made when it closes.
	defer func() { c.b.telemetry.ConnClosed(c, c.b.clock.Now()) }()
	defer c.nc.Close()
	defer c.readBuf.Reset() // lets go of pinned segments (fetch-pins-segments)
	c.log.Debug("connection opened")
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc) {
		return
	}
	// A small read buffer: it lets a typical request (a heartbeat, a share
	// fetch, an acknowledgement) arrive in one read, while a larger frame's
	// body is read straight into its own buffer. Every connection holds
	// one, so its size is what thousands of idle or hostile connections
	// cost.
	r := bufio.NewReaderSize(c.nc, 512)
	for {
		frame, err := wire.ReadFrameInto(r, c.frame, c.maxFrame())
		if err != nil {
			c.readFailed(err)
			return
		}
		c.quota.Busy() // connections-max-idle: a request in hand is not idleness
		if c.sasl != nil && c.sasl.state == saslRawToken {
			if !c.rawSASLToken(frame) {
				return
			}
		} else if !c.handleFrame(frame) {
			return
		}
		// Keep the frame buffer for the next request unless it is large:
		// an idle connection should not pin a big produce request.
		if cap(frame) <= keepFrameBuf {
			c.frame = frame[:0]
		} else {
			c.frame = nil
		}
	}
}

// handshake runs the TLS handshake of an SSL listener's connection within
// auth.HandshakeTimeout and sets the principal. A failed handshake is one log
// line; the caller closes the connection.
func (c *conn) handshake(tc *tls.Conn) bool {
	tc.SetDeadline(time.Now().Add(auth.HandshakeTimeout))
	err := tc.Handshake()
	c.b.mu.Lock()
	if c.b.closing {
		// Close's read deadline may have been cleared above: the
		// connection closes before its first request.
		c.b.mu.Unlock()
		c.log.Debug("connection closed for shutdown during the TLS handshake")
		return false
	}
	tc.SetDeadline(time.Time{})
	c.b.mu.Unlock()
	if err != nil {
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET):
			c.log.Debug("connection closed by client during the TLS handshake", "err", err)
		default:
			c.log.Warn("closing connection: TLS handshake failed", attrListener, c.l.name, "err", err)
		}
		return false
	}
	// On SASL_SSL the principal is the SASL user's (sasl-principal),
	// set when SASL completes, as Kafka's principal builder takes the
	// SASL name over a client certificate.
	principal := auth.PrincipalOf(tc.ConnectionState())
	if c.sasl == nil {
		c.b.mu.Lock() // Principals (tests) reads it from another goroutine
		c.principal = principal
		c.b.mu.Unlock()
	}
	c.log.Debug("TLS handshake done", attrListener, c.l.name, attrPrincipal, c.principal)
	return true
}

// readFailed logs why reading stopped: quietly for a client that hung up or
// a broker that is shutting down, as a warning for a broken frame.
func (c *conn) readFailed(err error) {
	if reason := readRejectReason(err); reason != "" {
		c.b.metrics.RejectFrame(reason, c.nodeLabel())
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug("connection closed by client")
	case errors.Is(err, syscall.ECONNRESET):
		// A client that exits or closes with SO_LINGER 0 resets rather
		// than closes; it did nothing wrong.
		c.log.Debug("connection reset by client")
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Debug("connection closed for shutdown")
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Warn("closing connection: frame cut short", "err", err)
	default:
		c.log.Warn("closing connection: unreadable frame", "err", err)
	}
}

// handleFrame parses, dispatches and answers one frame. It returns false
// when the connection must close.
func (c *conn) handleFrame(frame []byte) bool {
	h, body, err := wire.ParseHeader(frame)
	if err != nil && !errors.Is(err, wire.ErrUnknownAPIKey) && !errors.Is(err, wire.ErrUnsupportedVersion) {
		c.b.metrics.RejectFrame(metrics.RejectBadHeader, c.nodeLabel())
		c.log.Warn("closing connection: malformed request header", "err", err)
		return false
	}
	if c.sasl != nil && !c.saslGate(h, body) {
		return false
	}
	start := time.Now()
	a := lookupAPI(h.APIKey)
	if a == nil || !c.b.servesVersion(h.APIKey, h.APIVersion) { // the release's range (release.go)
		if h.APIKey == apiVersionsKey {
			// The one request that must be answered whatever its version:
			// the client learns our ranges and retries with one we serve.
			// Clients newer than us do this on every connection, so it is
			// not worth more than a debug line.
			c.log.Debug("answering ApiVersions at v0: version not served",
				attrAPIVersion, h.APIVersion, attrClientID, h.ClientID)
			resp := c.b.unsupportedAPIVersionsResponse()
			resp.SetVersion(0)
			countRequest(c.b.metrics, c.nodeLabel(), h.APIKey, resp, nil, start)
			return c.send(h.CorrelationID, resp)
		}
		c.b.metrics.RejectFrame(metrics.RejectNotServed, c.nodeLabel())
		c.log.Warn("closing connection: unsupported API or version",
			attrAPI, kmsg.NameForKey(h.APIKey), "api_key", h.APIKey, attrAPIVersion, h.APIVersion, attrClientID, h.ClientID,
			"err", errNotServed)
		return false
	}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		c.b.metrics.RejectFrame(metrics.RejectBadBody, c.nodeLabel())
		c.log.Warn("closing connection: malformed request body", attrAPI, kmsg.NameForKey(h.APIKey),
			attrAPIVersion, h.APIVersion, attrClientID, h.ClientID, "err", err)
		return false
	}
	c.readBuf.Reset()                                                   // the previous answer was written (readBuf)
	resp, err := c.dispatch(a, &request{conn: c, header: h, body: req}) // faults.go, then call
	countRequest(c.b.metrics, c.nodeLabel(), h.APIKey, resp, err, start)
	if errors.Is(err, errHandlerPanic) {
		return false // call logged it, with the stack: one line per closed connection
	}
	if err != nil {
		c.log.Warn("closing connection", attrAPI, kmsg.NameForKey(h.APIKey), attrAPIVersion, h.APIVersion,
			attrClientID, h.ClientID, "err", err)
		return false
	}
	if resp == nil {
		c.quota.Idle() // no answer (acks=0): idle from now
		return true
	}
	resp.SetVersion(h.APIVersion)
	if c.closeAfterSend {
		c.delayFailedAuth() // the last answer: a failed SASL exchange
	}
	return c.send(h.CorrelationID, resp) && !c.closeAfterSend
}

// nodeLabel is the node label of the node the connection came to.
func (c *conn) nodeLabel() string { return c.b.metrics.Node(c.node()) }

// errHandlerPanic reports a recovered panic; the connection is closed.
var errHandlerPanic = errors.New("internal error while handling the request")

// errNotServed is why a request for an API or version outside the dispatch
// table closes its connection.
var errNotServed = errors.New("API or version not advertised by ApiVersions")

// call runs the handler, turning a panic (our bug) into a logged error that
// closes this one connection rather than the whole broker.
func (c *conn) call(a *api, r *request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", attrAPI, kmsg.NameForKey(a.key), attrAPIVersion, r.header.APIVersion,
				attrClientID, r.header.ClientID, "panic", p, "stack", string(debug.Stack()))
			c.b.metrics.Panics().Inc()
			resp, err = nil, errHandlerPanic
		}
	}()
	if resp, closed := c.b.gateClosed(r); closed { // feature_gates.go
		return resp, nil
	}
	return a.handle(c.b, r)
}

// send encodes resp (its version set by the caller) and writes it in one
// call. A Fetch or ShareFetch response that carries enough record bytes
// goes out as one vectored write whose record segments point into the
// partition logs, so record bytes are never copied on the way out.
func (c *conn) send(correlationID int32, resp kmsg.Response) bool {
	// Idle from here, before the client can read the answer and act on
	// it (move a test's clock); the write itself is bounded by its
	// deadline.
	c.quota.Idle()
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if c.buf == nil { // new, or its last answer was large (sent)
		c.buf = wire.TakeResponseBuffer()
	}
	var err error
	var spliced bool
	switch r := resp.(type) {
	case *wire.FetchResponse:
		return c.sendFetch(correlationID, r) // fetch_write.go
	case *kmsg.FetchResponse:
		wire.EmptyFetchRecordSets(r)
		c.buf, c.segs, spliced = wire.AppendFetchResponse(c.buf[:0], c.segs[:0], correlationID, r, nil)
	case *wire.ShareFetchResponse:
		wire.EmptyShareFetchRecordSets(&r.ShareFetchResponse)
		c.buf, c.segs, spliced = wire.AppendShareFetchResponse(c.buf[:0], c.segs[:0], correlationID, &r.ShareFetchResponse, r.RecordPieces())
	case *kmsg.ShareFetchResponse:
		wire.EmptyShareFetchRecordSets(r)
		c.buf, c.segs, spliced = wire.AppendShareFetchResponse(c.buf[:0], c.segs[:0], correlationID, r, nil)
	}
	if spliced {
		bufs := net.Buffers(c.segs)
		_, err = bufs.WriteTo(c.nc)
		clear(c.segs) // drop the references into the logs
		return c.sent(err)
	}
	// A large CreateTopics answer goes out in pieces (wire:
	// create-topics-answer-streamed); any other in one write.
	c.buf, err = wire.WriteResponse(c.nc, c.buf, correlationID, resp)
	return c.sent(err)
}

// sent finishes a write: it hands an oversized buffer to the next large
// answer of any connection (wire.ReturnResponseBuffer) and reports whether
// the connection can go on.
func (c *conn) sent(err error) bool {
	if cap(c.buf) > keepResponseBuf {
		wire.ReturnResponseBuffer(c.buf)
		c.buf = nil
	}
	if err != nil {
		c.log.Debug("closing connection: write failed", "err", err)
		return false
	}
	return true
}
