// Package wire turns bytes into Kafka requests and Kafka responses into bytes.
// It knows frames, request and response headers, and how kmsg decodes and
// encodes bodies. It never touches a socket: every function works on an
// io.Reader or a byte slice, so it is fuzzable and testable without a broker.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameBytes is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxFrameBytes = 104857600

// Errors returned by ReadFrame. Each means the connection cannot continue:
// the stream is no longer aligned on a frame boundary.
var (
	ErrFrameTooLarge  = errors.New("frame larger than socket.request.max.bytes")
	ErrFrameSize      = errors.New("frame size must be positive")
	ErrHTTPOnKafka    = errors.New("an HTTP request was sent to the Kafka port")
	ErrTLSOnPlaintext = errors.New("a TLS handshake was sent to the plaintext Kafka port")
)

// ReadFrame reads one size-prefixed frame from r and returns its body (the
// bytes after the 4-byte size). The size is checked against maxBytes before
// anything is allocated, and the body's buffer grows with the bytes that
// arrive, never ahead of them by more than their own size (plus a first
// step of firstFrameStep): a size prefix alone costs nothing, so a client
// that promises 100 MiB and sends 20 bytes costs a few KiB. A clean EOF
// before the first byte returns io.EOF; a frame cut short returns
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	return ReadFrameInto(r, nil, maxBytes)
}

// ReadFrameInto is ReadFrame reading into buf when it is large enough, so a
// connection can reuse one buffer for all its requests. The returned body
// aliases buf: it is valid only until buf is used again.
func ReadFrameInto(r io.Reader, buf []byte, maxBytes int32) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err
	}
	size, err := ParseFrameSize(sizeBuf, maxBytes)
	if err != nil {
		return nil, err
	}
	if cap(buf) >= int(size) {
		body := buf[:size]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, unexpectedEOF(err)
		}
		return body, nil
	}
	// Invariant: cap(body) <= max(firstFrameStep, frameGrowth*len(body))
	// before each read, so memory follows what the peer actually sent.
	body := make([]byte, 0, min(int(size), max(cap(buf), firstFrameStep)))
	for len(body) < int(size) {
		if len(body) == cap(body) {
			// Copied by hand: slices.Grow allocates the added room a
			// second time when built with -race.
			grown := make([]byte, len(body), nextFrameStep(len(body), int(size)))
			copy(grown, body)
			body = grown
		}
		// Never read past the frame: the bytes after it are the next
		// request's.
		n, err := io.ReadAtLeast(r, body[len(body):min(cap(body), int(size))], 1)
		body = body[:len(body)+n]
		if err != nil && len(body) < int(size) {
			return nil, unexpectedEOF(err)
		}
	}
	return body, nil
}

// firstFrameStep is the buffer a frame larger than the connection's reused
// buffer starts with; it grows frameGrowth-fold as bytes arrive. Most
// requests fit in it.
const firstFrameStep = 512

// frameGrowth is how many times larger each step of a growing frame is:
// a peer that stops sending holds at most frameGrowth times what it sent.
const frameGrowth = 8

// nextFrameStep is the capacity a frame of size bytes grows to when its
// buffer is full with n bytes: frameGrowth times n, but never past
// size/frameGrowth, and the whole size once that much has arrived. Every
// step copies what has arrived, so the steps before the last cost at most
// about a quarter of the frame, whatever its size (doubling cost up to
// twice the frame: a 99 MiB Produce allocated 226 MiB, now 113 MiB).
func nextFrameStep(n, size int) int {
	full := size / frameGrowth
	if n >= full {
		return size
	}
	return min(frameGrowth*n, full)
}

// unexpectedEOF turns an EOF inside a frame into io.ErrUnexpectedEOF: the
// stream ended mid-frame.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ParseFrameSize validates a 4-byte size prefix. It recognises the first
// bytes of an HTTP request and of a TLS handshake, which are the two usual
// ways a misconfigured client talks to a Kafka port, and says so.
func ParseFrameSize(prefix [4]byte, maxBytes int32) (int32, error) {
	switch {
	case string(prefix[:]) == "GET " || string(prefix[:]) == "POST" ||
		string(prefix[:]) == "HTTP" || string(prefix[:]) == "PUT " || string(prefix[:]) == "HEAD":
		return 0, ErrHTTPOnKafka
	case prefix[0] == 0x16 && prefix[1] == 0x03 && prefix[2] <= 0x04:
		// A TLS record: handshake content type 22, version 3.x.
		return 0, ErrTLSOnPlaintext
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size <= 0 {
		return 0, fmt.Errorf("%w: got %d", ErrFrameSize, size)
	}
	if size > maxBytes {
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, maxBytes)
	}
	return size, nil
}
