package bench_test

import "sync"

// errBox keeps the first error that produce promises, which run on kgo's
// goroutines, report.
type errBox struct {
	mu  sync.Mutex
	err error
}

func (e *errBox) set(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (e *errBox) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
