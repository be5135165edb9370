package conformance_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRequest sends req on a fresh TCP connection, bypassing kgo's version
// negotiation (kgo refuses to send a key the broker does not advertise),
// and returns the response or a description of how the broker refused.
// Every read and write is under a deadline.
func rawRequest(addr string, req kmsg.Request) (kmsg.Response, string) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, "dial: " + err.Error()
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err.Error()
	}
	const correlationID = 7
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("conformance"))
	if _, err := conn.Write(f.AppendRequest(nil, req, correlationID)); err != nil {
		return nil, "write: " + err.Error()
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "connection closed"
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, "no answer"
		}
		return nil, "connection closed" // reset by the peer
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, "short response: " + err.Error()
	}
	if len(body) < 4 || binary.BigEndian.Uint32(body) != correlationID {
		return nil, "bad correlation ID"
	}
	body = body[4:]
	if req.IsFlexible() {
		body = body[1:] // empty header tags
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Sprintf("decode: %v", err)
	}
	return resp, ""
}
