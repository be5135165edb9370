//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens a file of the data directory without following a
// symbolic link in its last element (no-symlinks): O_NOFOLLOW makes the
// kernel refuse one with ELOOP, which becomes ErrSymlink naming the file.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, symlinkError(name)
	}
	return f, err
}
