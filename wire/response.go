package wire

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is special in the response header: ApiVersions responses
// always use header v0 (no tagged fields), whatever the request version, so
// that a client can read the answer before it knows which versions we speak.
const apiVersionsKey = 18

// AppendResponse appends a whole response frame (size, header, body) for
// resp to dst and returns it. resp's version must already be set to the
// request's version. An answer whose size is known beforehand
// (responseBodySize) gets its room first, so a large one does not grow
// its buffer step by step (response_stream.go).
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	return appendResponse(dst, correlationID, resp, responseBodySize(resp))
}

// appendResponse is AppendResponse with the body's size, or -1 when it is
// not known.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response, bodySize int) []byte {
	if bodySize > 0 {
		dst = slices.Grow(dst, responseHeaderSize(resp)+bodySize)
	}
	dst, start := appendResponseHeader(dst, correlationID, resp)
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// appendResponseHeader appends a response frame's size (zero, for the
// caller to fill in at start) and header.
func appendResponseHeader(dst []byte, correlationID int32, resp kmsg.Response) (_ []byte, start int) {
	start = len(dst)
	dst = append(dst, 0, 0, 0, 0) // size
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if responseHeaderSize(resp) > 8 {
		dst = append(dst, 0) // empty tagged-field section
	}
	return dst, start
}

// responseHeaderSize is how many bytes appendResponseHeader appends: the
// size, the correlation ID and, for a flexible answer other than
// ApiVersions, an empty tagged-field section.
func responseHeaderSize(resp kmsg.Response) int {
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		return 4 + 4 + 1
	}
	return 4 + 4
}
