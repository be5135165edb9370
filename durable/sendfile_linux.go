package durable

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// sendFile writes n bytes of f from off to w with sendfile(2) when w is a
// connection the Go runtime polls: a syscall.Conn, as a *net.TCPConn of a
// PLAINTEXT listener is (a *tls.Conn is not: TLS must encrypt what it
// sends). handled false means nothing was written and the caller copies.
//
// Go's own sendfile path does not fit a shared handle: *net.TCPConn's
// ReadFrom hands sendfile only an *os.File or an *io.LimitedReader over
// one (net/sendfile.go, sendFile; an *io.SectionReader is copied through
// a buffer), and on Linux sends from the file's current offset
// (internal/poll/sendfile_unix.go, "The offset is always nil on Linux").
// Every connection reading a segment shares its handle, and so its
// offset. So sendfile is called here with an explicit offset, which
// leaves the handle's own untouched, inside the connection's
// RawConn.Write: that takes the connection's write lock, waits on the
// poller while the socket is full, and returns the write deadline's error
// when it passes, as Go's own sendfile loop does.
func sendFile(w io.Writer, f *os.File, off, n int64) (written int64, handled bool, err error) {
	sc, ok := w.(syscall.Conn)
	if !ok || n <= 0 {
		return 0, n <= 0, nil
	}
	out, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	in, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	handled = true
	var serr error
	cerr := in.Control(func(infd uintptr) {
		werr := out.Write(func(outfd uintptr) bool {
			for written < n {
				m, e := syscall.Sendfile(int(outfd), int(infd), &off, int(min(n-written, 1<<30)))
				if m > 0 {
					written += int64(m)
				}
				switch e {
				case nil:
					if m == 0 {
						// The file ends before the section: it shrank,
						// which nothing here does to published bytes.
						serr = fmt.Errorf("%s: %w at offset %d, %d bytes short", f.Name(), io.ErrUnexpectedEOF, off, n-written)
						return true
					}
				case syscall.EINTR:
				case syscall.EAGAIN:
					return false // the socket is full: wait for it
				case syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP:
					// No sendfile for this pair of descriptors.
					handled = written > 0
					serr = e
					return true
				default:
					serr = e
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	if !handled {
		return 0, false, nil
	}
	if serr != nil {
		serr = fmt.Errorf("sendfile: %w", serr)
	}
	return written, true, serr
}
