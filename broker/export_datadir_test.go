package broker

// SetBeforeRecover sets a hook that runs in Start once the HTTP server is
// up, before the data directory is recovered. Call it before Start.
func SetBeforeRecover(b *Broker, f func()) { b.cfg.beforeRecover = f }
