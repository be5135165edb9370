package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is special in the response header: ApiVersions responses
// always use header v0 (no tagged fields), whatever the request version, so
// that a client can read the answer before it knows which versions we speak.
const apiVersionsKey = 18

// AppendResponse appends a whole response frame (size, header, body) for
// resp to dst and returns it. resp's version must already be set to the
// request's version.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		dst = append(dst, 0) // empty tagged-field section
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
