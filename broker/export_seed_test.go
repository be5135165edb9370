package broker

// SetBeforeSeed sets a hook that runs in Start once the HTTP server is
// up, before the seed is applied. Call it before Start.
func SetBeforeSeed(b *Broker, f func()) { b.cfg.beforeSeed = f }
