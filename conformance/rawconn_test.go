package conformance_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// rawRequest sends req on a fresh TCP connection, bypassing kgo's version
// negotiation (kgo refuses to send a key the broker does not advertise),
// and returns the response or a description of how the broker refused,
// which a scenario notes like any answer. The wait is bounded.
func rawRequest(t testing.TB, addr string, req kmsg.Request) (kmsg.Response, string) {
	t.Helper()
	c := rawconn.Dial(t, addr)
	resp, err := c.TryRecv(req, c.Send(req), 5*time.Second)
	var ne net.Error
	switch {
	case err == nil:
		return resp, ""
	case rawconn.IsClosed(err):
		return nil, "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return nil, "no answer"
	}
	return nil, err.Error()
}
