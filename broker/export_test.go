package broker

// SetTxnProduceHook sets b's txnProduceHook. Call it before b serves any
// request.
func SetTxnProduceHook(b *Broker, f func()) { b.txnProduceHook = f }
