package broker

// Fault injection for the test API, at the edge: package faults keeps the
// armed faults and picks the one a request matches; wire finds a request's
// topic and group names and builds an answer that carries only an error
// code (wire.ErrorResponse); here what the fault says is done: that answer
// sent without calling the handler, a delay, a dropped connection.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/faults"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

// errInjectedDrop closes a connection whose request matched a drop fault.
var errInjectedDrop = errors.New("connection dropped by an injected fault")

// faultAPIs answers package faults' questions about API keys from the
// dispatch table and kmsg.
type faultAPIs struct{}

func (faultAPIs) Served(key int16) bool       { return lookupAPI(key) != nil }
func (faultAPIs) Name(key int16) string       { return kmsg.NameForKey(key) }
func (faultAPIs) HasErrorCode(key int16) bool { return wire.HasErrorCode(key) }

// newFault validates a fault the test API posts.
func newFault(in faults.Spec) (faults.Fault, error) { return faults.New(in, faultAPIs{}) }

// takeFault takes the armed fault that applies to r, if any. store
// resolves the topic IDs that requests carry instead of names (Produce
// v13, Fetch v13+); nil resolves none.
func takeFault(fs *faults.Store, r *request, store *storage.Store) *faults.Fault {
	return fs.Take(r.header.APIKey, func() (topics, groups []string) {
		return wire.RequestNames(r.body, func(id [16]byte) (string, bool) {
			if store == nil {
				return "", false
			}
			return store.TopicName(id)
		})
	})
}

// dispatch runs r through the armed faults, then (unless a fault answered
// for it) through its handler.
func (c *conn) dispatch(a *api, r *request) (kmsg.Response, error) {
	f := takeFault(&c.b.faults, r, c.b.store)
	switch {
	case f == nil:
		return c.call(a, r)
	case f.Drop:
		return nil, errInjectedDrop
	case f.Latency > 0:
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-c.b.serveCtx.Done():
			t.Stop()
		}
		return c.call(a, r)
	}
	if p, ok := r.body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	return wire.ErrorResponse(r.body, f.ErrorCode), nil
}
