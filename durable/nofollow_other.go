//go:build !unix

package durable

import "os"

// openNoFollow: without O_NOFOLLOW the name is checked first. Open refuses
// a data directory on these systems anyway (lockFile), so nothing reaches
// here but that check.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, symlinkError(name)
	}
	return os.OpenFile(name, flag, perm)
}
