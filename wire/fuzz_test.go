package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/sharebroker/sharebroker/wire"
)

// fuzzMaxFrame is the frame limit in the fuzz targets: small, so that a
// frame over it is easy to hit and an allocation past it would show.
const fuzzMaxFrame = 1 << 16

// addCapturedSeeds seeds f with every captured client frame; withSize
// keeps the 4-byte size prefix (for ReadFrame) or strips it (for the header
// and body decoders).
func addCapturedSeeds(f *testing.F, withSize bool) {
	frames := loadFrames(f)
	if len(frames) == 0 {
		f.Fatal("no captured frames under ../testdata/frames")
	}
	for _, frame := range frames {
		if withSize {
			f.Add(frame)
		} else {
			f.Add(frame[4:])
		}
	}
}

// readAll reads frames from r until an error and returns them with it.
func readAll(r io.Reader) ([][]byte, error) {
	var frames [][]byte
	for {
		f, err := wire.ReadFrame(r, fuzzMaxFrame)
		if err != nil {
			return frames, err
		}
		frames = append(frames, f)
	}
}

// FuzzReadFrame reads a stream of frames whole and one byte at a time. Both
// must give the same frames and the same error class, no frame may exceed
// the limit, and the frames must be the stream's bytes in order.
func FuzzReadFrame(f *testing.F) {
	addCapturedSeeds(f, true)
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x10})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, stream []byte) {
		whole, errWhole := readAll(bytes.NewReader(stream))
		split, errSplit := readAll(iotest.OneByteReader(bytes.NewReader(stream)))
		if len(whole) != len(split) || errors.Is(errWhole, io.ErrUnexpectedEOF) != errors.Is(errSplit, io.ErrUnexpectedEOF) ||
			errors.Is(errWhole, io.EOF) != errors.Is(errSplit, io.EOF) {
			t.Fatalf("whole: %d frames, %v; one byte at a time: %d frames, %v", len(whole), errWhole, len(split), errSplit)
		}
		pos := 0
		for i, fr := range whole {
			if len(fr) == 0 || len(fr) > fuzzMaxFrame {
				t.Fatalf("frame %d has %d bytes", i, len(fr))
			}
			if !bytes.Equal(fr, split[i]) || !bytes.Equal(fr, stream[pos+4:pos+4+len(fr)]) {
				t.Fatalf("frame %d differs from the stream", i)
			}
			pos += 4 + len(fr)
		}
	})
}

// FuzzParseHeader checks that a parsed header says what its bytes say and
// that the body it returns is the tail of the frame.
func FuzzParseHeader(f *testing.F) {
	addCapturedSeeds(f, false)
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := wire.ParseHeader(frame)
		keyOnly := errors.Is(err, wire.ErrUnknownAPIKey) || errors.Is(err, wire.ErrUnsupportedVersion)
		if err != nil && !keyOnly {
			if !errors.Is(err, wire.ErrShortHeader) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if h.APIKey != int16(binary.BigEndian.Uint16(frame)) || h.APIVersion != int16(binary.BigEndian.Uint16(frame[2:])) ||
			h.CorrelationID != int32(binary.BigEndian.Uint32(frame[4:])) {
			t.Fatalf("header %+v does not match\n%s", h, hex.Dump(frame))
		}
		if len(body) > len(frame)-10-len(h.ClientID) || !bytes.HasSuffix(frame, body) {
			t.Fatalf("body is not the frame's tail")
		}
		if keyOnly && h.Flexible {
			t.Fatalf("an unknown key or version cannot be known to be flexible")
		}
	})
}

// FuzzDecodeRequest decodes a whole request frame (header and body). It must
// never panic, and a body that decodes must re-encode to bytes that decode
// to the same request again: decode, encode, decode, encode is stable.
func FuzzDecodeRequest(f *testing.F) {
	addCapturedSeeds(f, false)
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := wire.ParseHeader(frame)
		if err != nil {
			return
		}
		req, err := wire.DecodeBody(h, body)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformedBody) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		first := req.AppendTo(nil)
		again, err := wire.DecodeBody(h, first)
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v\n%s", err, hex.Dump(first))
		}
		if second := again.AppendTo(nil); !bytes.Equal(first, second) {
			t.Fatalf("encoding is not stable\nfirst:\n%s\nsecond:\n%s", hex.Dump(first), hex.Dump(second))
		}
	})
}
