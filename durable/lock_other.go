//go:build !unix

package durable

import (
	"fmt"
	"os"
)

// lockFile: only Unix systems have flock; a data directory there would go
// unguarded against a second broker, so it is refused.
func lockFile(f *os.File, dir string) error {
	return fmt.Errorf("data directory %s: locking needs flock, which this system lacks", dir)
}
