package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// maxAPIKey bounds the dispatch table. Kafka's keys stay well below it.
const maxAPIKey = 127

// request is one decoded request with the connection it came on. Its byte
// fields alias the connection's reused frame buffer: a handler that keeps
// bytes from a request after returning must copy them (storage copies
// produced batches into the log).
type request struct {
	conn   *conn
	header wire.Header
	body   kmsg.Request
}

// handlerFunc answers one request. A nil response with a nil error means
// "send nothing" (Produce with acks=0). An error means the conversation is
// broken: the connection is closed with one log line.
type handlerFunc func(b *Broker, r *request) (kmsg.Response, error)

// api is one entry of the dispatch table: the versions we serve and the
// handler that serves them.
type api struct {
	key        int16
	minVersion int16
	maxVersion int16
	handle     handlerFunc
}

// apis is the dispatch table, indexed by API key. ApiVersions advertises
// exactly its non-nil entries, so a key is advertised only if a handler
// serves it.
var apis [maxAPIKey + 1]*api

// register adds a handler for key serving versions [minV, maxV]. It panics
// on a key outside the table, a duplicate key or an inverted range: each is
// a programming error found at start-up, never at a client's request.
//
// That every registered version is one kmsg decodes is checked by
// TestDispatchTableWithinKmsg rather than here: asking kmsg for a request of
// each of the ~45 registered APIs in init took half of this package's init,
// 0.09 ms of every start (GODEBUG=inittrace=1, median of 40).
func register(key, minV, maxV int16, fn handlerFunc) {
	switch {
	case key < 0 || key > maxAPIKey:
		panic(fmt.Sprintf("register: API key %d outside the dispatch table", key))
	case apis[key] != nil:
		panic(fmt.Sprintf("register: %s registered twice", kmsg.NameForKey(key)))
	case minV < 0 || minV > maxV:
		panic(fmt.Sprintf("register: %s has inverted range %d-%d", kmsg.NameForKey(key), minV, maxV))
	}
	handle := func(b *Broker, r *request) (kmsg.Response, error) {
		wire.DropRepeatedEntries(r.body) // describe-each-once, before any handler looks
		return fn(b, r)
	}
	apis[key] = &api{key: key, minVersion: minV, maxVersion: maxV, handle: handle}
}

// lookupAPI returns the entry for key, or nil when we do not serve it.
func lookupAPI(key int16) *api {
	if key < 0 || key > maxAPIKey {
		return nil
	}
	return apis[key]
}
