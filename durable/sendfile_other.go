//go:build !linux

package durable

import (
	"io"
	"os"
)

// sendFile has no sendfile(2) with an explicit offset outside Linux; the
// caller copies in pieces.
func sendFile(io.Writer, *os.File, int64, int64) (int64, bool, error) { return 0, false, nil }
