// Package refusal is the error a domain package returns when Kafka
// answers with a code and a message of its own: the error's text is that
// message word for word, as the answer carries it, and errors.Is finds
// the sentinel the broker maps to the code.
package refusal

// New returns an error whose text is msg and which wraps sentinel (nil
// when the code is picked some other way).
func New(sentinel error, msg string) error { return refusal{sentinel, msg} }

type refusal struct {
	sentinel error
	msg      string
}

func (e refusal) Error() string { return e.msg }
func (e refusal) Unwrap() error { return e.sentinel }
