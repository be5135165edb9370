package broker

// SetTxnProduceHook sets b's txnProduceHook. Call it before b serves any
// request.
func SetTxnProduceHook(b *Broker, f func()) { b.txnProduceHook = f }

// SetAwaitHook sets b's awaitHook, which runs each time a JoinGroup or
// SyncGroup waits for its answer. Call it before b.Start.
func SetAwaitHook(b *Broker, f func(answered func() bool)) { b.awaitHook = f }
