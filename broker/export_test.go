package broker

import "github.com/sharebroker/sharebroker/fetchsession"

// SetTxnProduceHook sets b's txnProduceHook. Call it before b serves any
// request.
func SetTxnProduceHook(b *Broker, f func()) { b.txnProduceHook = f }

// SetAwaitHook sets b's awaitHook, which runs each time a JoinGroup or
// SyncGroup waits for its answer. Call it before b.Start.
func SetAwaitHook(b *Broker, f func(answered func() bool)) { b.awaitHook = f }

// Principals returns the principals of b's open connections on SSL and
// SASL listeners.
func Principals(b *Broker) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for c := range b.conns {
		if c.l.tls != nil || c.l.sasl {
			out = append(out, c.principal)
		}
	}
	return out
}

// NodeListenerAddrs returns the bound address of the listener named name
// on every node.
func NodeListenerAddrs(b *Broker, name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range b.listeners {
		if l.name == name {
			out = append(out, l.ln.Addr().String())
		}
	}
	return out
}

// FetchSessionStats returns the figures of the first node's Fetch
// session cache.
func FetchSessionStats(b *Broker) fetchsession.Stats { return b.fetchSessions[0].Stats() }
