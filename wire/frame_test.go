package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/sharebroker/sharebroker/wire"
)

// frameOf prefixes body with its 4-byte size.
func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func sizePrefix(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func TestReadFrame(t *testing.T) {
	body := []byte("0123456789abcdef")
	tests := []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{name: "whole frame", in: frameOf(body), max: 100, want: body},
		{name: "exactly the limit", in: frameOf(body), max: int32(len(body)), want: body},
		{name: "one over the limit", in: frameOf(body), max: int32(len(body)) - 1, wantErr: wire.ErrFrameTooLarge},
		{name: "size zero", in: sizePrefix(0), max: 100, wantErr: wire.ErrFrameSize},
		{name: "size negative", in: sizePrefix(0xffffffff), max: 100, wantErr: wire.ErrFrameSize},
		{name: "size min int32", in: sizePrefix(0x80000000), max: 100, wantErr: wire.ErrFrameSize},
		{name: "size max int32", in: sizePrefix(0x7fffffff), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrFrameTooLarge},
		{name: "empty stream", in: nil, max: 100, wantErr: io.EOF},
		{name: "prefix cut short", in: []byte{0, 0}, max: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "body cut short", in: frameOf(body)[:10], max: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "body missing", in: sizePrefix(5), max: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "HTTP GET", in: []byte("GET / HTTP/1.1\r\n\r\n"), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrHTTPOnKafka},
		{name: "HTTP POST", in: []byte("POST /x HTTP/1.1\r\n"), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrHTTPOnKafka},
		{name: "HTTP PUT", in: []byte("PUT /x HTTP/1.1\r\n"), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrHTTPOnKafka},
		{name: "HTTP HEAD", in: []byte("HEAD / HTTP/1.1\r\n"), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrHTTPOnKafka},
		{name: "HTTP response", in: []byte("HTTP/1.1 200 OK\r\n"), max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrHTTPOnKafka},
		{name: "TLS 1.0 client hello", in: []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}, max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrTLSOnPlaintext},
		{name: "TLS 1.2 client hello", in: []byte{0x16, 0x03, 0x03, 0x00, 0x40}, max: wire.DefaultMaxFrameBytes, wantErr: wire.ErrTLSOnPlaintext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []struct {
				name string
				r    func([]byte) io.Reader
			}{
				{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
				{"one byte at a time", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
				{"half", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
			} {
				got, err := wire.ReadFrame(split.r(tc.in), tc.max)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("%s: err = %v, want %v", split.name, err, tc.wantErr)
					}
					if got != nil {
						t.Fatalf("%s: got %d bytes with an error", split.name, len(got))
					}
					continue
				}
				if err != nil || !bytes.Equal(got, tc.want) {
					t.Fatalf("%s: got %q, %v; want %q", split.name, got, err, tc.want)
				}
			}
		})
	}
}

// TestReadFrameCutEverywhere reads two frames back to back from a stream cut
// at every offset: a cut at a frame boundary is a clean EOF, anywhere else
// io.ErrUnexpectedEOF, and the frames before the cut always come out whole.
func TestReadFrameCutEverywhere(t *testing.T) {
	first, second := []byte("first frame"), []byte("and the second one")
	stream := append(frameOf(first), frameOf(second)...)
	boundary := len(frameOf(first))
	for cut := 0; cut <= len(stream); cut++ {
		r := iotest.OneByteReader(bytes.NewReader(stream[:cut]))
		var got [][]byte
		var err error
		for {
			var f []byte
			if f, err = wire.ReadFrame(r, 1024); err != nil {
				break
			}
			got = append(got, f)
		}
		wantFrames, wantErr := 0, io.ErrUnexpectedEOF
		switch {
		case cut == 0:
			wantErr = io.EOF
		case cut == boundary:
			wantFrames, wantErr = 1, io.EOF
		case cut == len(stream):
			wantFrames, wantErr = 2, io.EOF
		case cut > boundary:
			wantFrames = 1
		}
		if len(got) != wantFrames || !errors.Is(err, wantErr) {
			t.Fatalf("cut at %d: %d frames, err %v; want %d frames, err %v", cut, len(got), err, wantFrames, wantErr)
		}
		if len(got) > 0 && !bytes.Equal(got[0], first) || len(got) > 1 && !bytes.Equal(got[1], second) {
			t.Fatalf("cut at %d: frames %q", cut, got)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestReadFrameLimitBeforeAllocating sends a size just over a 1 GiB limit
// followed by no body: the frame must be refused after reading only the
// prefix and without allocating anything near its size.
func TestReadFrameLimitBeforeAllocating(t *testing.T) {
	const limit = 1 << 30
	r := &countingReader{r: io.MultiReader(bytes.NewReader(sizePrefix(limit+1)), bytes.NewReader(make([]byte, 64)))}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := wire.ReadFrame(r, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
	if r.n != 4 {
		t.Fatalf("read %d bytes, want only the 4-byte prefix", r.n)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes while refusing the frame", grew)
	}
}

func TestParseFrameSize(t *testing.T) {
	tests := []struct {
		name    string
		prefix  [4]byte
		want    int32
		wantErr error
	}{
		{name: "one", prefix: [4]byte{0, 0, 0, 1}, want: 1},
		{name: "limit", prefix: [4]byte{0, 0, 1, 0}, want: 256},
		{name: "over limit", prefix: [4]byte{0, 0, 1, 1}, wantErr: wire.ErrFrameTooLarge},
		{name: "zero", prefix: [4]byte{}, wantErr: wire.ErrFrameSize},
		{name: "negative", prefix: [4]byte{0xff, 0xff, 0xff, 0xfe}, wantErr: wire.ErrFrameSize},
		{name: "GET", prefix: [4]byte{'G', 'E', 'T', ' '}, wantErr: wire.ErrHTTPOnKafka},
		{name: "TLS 1.3 record version", prefix: [4]byte{0x16, 0x03, 0x04, 0x00}, wantErr: wire.ErrTLSOnPlaintext},
		// 0x16 0x03 0x05 is not a TLS version, so it is just a size.
		{name: "not TLS", prefix: [4]byte{0x16, 0x03, 0x05, 0x00}, wantErr: wire.ErrFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ParseFrameSize(tc.prefix, 256)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("got %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// frame-grows-with-bytes: a size prefix the limit allows, followed by a
// few bytes and then nothing, costs about what arrived, not the size it
// promised: a hostile client cannot make the broker hold 100 MiB per
// connection with 24 bytes.
func TestReadFrameGrowsWithArrivingBytes(t *testing.T) {
	in := append(sizePrefix(100<<20), make([]byte, 20)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := wire.ReadFrame(bytes.NewReader(in), wire.DefaultMaxFrameBytes)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Fatalf("allocated %d bytes for a frame that sent 20", grew)
	}
}

// A frame larger than the first buffer step grows to its full size and
// comes out intact, and the frame after it is untouched: the growing
// reads never take bytes past the frame's end, however the stream is cut.
func TestReadFrameLargeThenNext(t *testing.T) {
	big := make([]byte, 1<<20+3)
	for i := range big {
		big[i] = byte(i * 7)
	}
	next := []byte("the next request")
	stream := append(frameOf(big), frameOf(next)...)
	for _, split := range []struct {
		name string
		r    func([]byte) io.Reader
	}{
		{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		{"half", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
		{"data and EOF together", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
	} {
		r := split.r(stream)
		got, err := wire.ReadFrameInto(r, make([]byte, 0, 100), wire.DefaultMaxFrameBytes)
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("%s: big frame: %d bytes, %v", split.name, len(got), err)
		}
		got, err = wire.ReadFrame(r, wire.DefaultMaxFrameBytes)
		if err != nil || !bytes.Equal(got, next) {
			t.Fatalf("%s: next frame: %q, %v", split.name, got, err)
		}
	}
}
