package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors returned while parsing a request. ErrUnknownAPIKey and
// ErrUnsupportedVersion leave the header valid, so the caller can still
// answer ApiVersions; the others mean the frame is garbage.
var (
	ErrShortHeader        = errors.New("request header cut short")
	ErrUnknownAPIKey      = errors.New("unknown API key")
	ErrUnsupportedVersion = errors.New("API version newer than this broker knows")
	ErrMalformedBody      = errors.New("malformed request body")
)

// Header is a Kafka request header (v1, or v2 with tagged fields). The header
// v0 of Kafka's very first clients (no client ID) is not accepted: every API
// we serve uses v1 or later.
type Header struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is empty when the client sent a null client ID.
	ClientID string
	// Flexible reports whether the header carried tagged fields (v2).
	Flexible bool
}

// ParseHeader reads the request header at the start of frame and returns it
// with the remaining body bytes. For an API key or version that kmsg does not
// know, it returns the header, the (undecoded) body and ErrUnknownAPIKey or
// ErrUnsupportedVersion; the client ID is still read, since it precedes the
// tagged fields in both header versions.
func ParseHeader(frame []byte) (Header, []byte, error) {
	var h Header
	if len(frame) < 10 {
		return h, nil, ErrShortHeader
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return h, nil, fmt.Errorf("%w: client ID of %d bytes, %d left", ErrShortHeader, idLen, len(rest))
		}
		h.ClientID = string(rest[:idLen])
		rest = rest[idLen:]
	} else if idLen < -1 {
		return h, nil, fmt.Errorf("%w: client ID length %d", ErrShortHeader, idLen)
	}

	maxV, flexibleFrom, known := versionInfo(h.APIKey)
	if !known {
		return h, rest, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if h.APIVersion < 0 || h.APIVersion > maxV {
		return h, rest, fmt.Errorf("%w: %s v%d", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion)
	}
	if h.APIVersion >= flexibleFrom {
		h.Flexible = true
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// DecodeBody decodes a request body for the key and version in h. The
// returned request's version is set. Strings in the request are copies, so
// the frame may be reused; byte fields (record batches) alias body.
func DecodeBody(h Header, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.APIKey)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if h.APIVersion < 0 || h.APIVersion > req.MaxVersion() {
		return nil, fmt.Errorf("%w: %s v%d", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion)
	}
	req.SetVersion(h.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrMalformedBody, kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return req, nil
}

// skipTags skips a tagged-field section: an unsigned varint count, then per
// field an unsigned varint tag, an unsigned varint size and size bytes.
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("%w: tagged field of %d bytes, %d left", ErrShortHeader, size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 {
		return 0, nil, fmt.Errorf("%w: bad varint in tagged fields", ErrShortHeader)
	}
	return v, b[n:], nil
}

// versionInfo returns what the header parser needs to know of an API key:
// the newest version kmsg decodes and the first version whose request
// header carries tagged fields (flexible versions, KIP-482; maxVersion+1
// when no version is flexible).
//
// It asks kmsg the first time a key is parsed and keeps the answer in
// keyInfos, so parsing a header allocates nothing after that. Filling the
// table for every key at package init instead made a request of each of
// kmsg's ~90 APIs and stepped through their versions: 0.1–0.3 ms of every
// start-up, mostly faulting in kmsg code a broker may never run.
func versionInfo(key int16) (maxVersion, flexibleFrom int16, known bool) {
	if key < 0 || int(key) >= len(keyInfos) {
		return 0, 0, false
	}
	info := keyInfos[key].Load()
	if info&infoFilled == 0 {
		info = lookupKeyInfo(key)
		keyInfos[key].Store(info) // concurrent parsers store the same value
	}
	return int16(info >> 15 & infoVersionMask), int16(info & infoVersionMask), info&infoKnown != 0
}

// keyInfos holds versionInfo's answer per key, packed: infoFilled once
// looked up, infoKnown when kmsg knows the key, the newest version in bits
// 15–29 and the first flexible version in bits 0–14 (versions are
// non-negative int16s).
var keyInfos [1 << 8]atomic.Uint32

const (
	infoFilled      = 1 << 31
	infoKnown       = 1 << 30
	infoVersionMask = 1<<15 - 1
)

func lookupKeyInfo(key int16) uint32 {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return infoFilled
	}
	maxV := req.MaxVersion()
	flexibleFrom := maxV + 1
	for v := int16(0); v <= maxV; v++ {
		req.SetVersion(v)
		if req.IsFlexible() {
			flexibleFrom = v
			break
		}
	}
	return infoFilled | infoKnown | uint32(maxV)<<15 | uint32(flexibleFrom)
}
