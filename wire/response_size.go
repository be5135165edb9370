package wire

import (
	"math/bits"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// responseBodySize returns how many bytes resp's body takes encoded, for
// the answers it knows (those that stream: response_stream.go), or -1.
// It is worked out from the answer's lengths, far cheaper than encoding
// it, and must equal len(resp.AppendTo(nil)) exactly: the frame's size
// is written from it before the body is (response_size_test.go compares
// them for every version).
func responseBodySize(resp kmsg.Response) int {
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return createTopicsSize(r)
	}
	return -1
}

// createTopicsSize is responseBodySize of a CreateTopics answer, as kmsg's
// CreateTopicsResponse.AppendTo lays it out (v0-v7; flexible from v5).
// An answer carrying unknown tagged fields (we never set any) is not
// counted: -1. The configs of topics created with none set are one list
// the broker shares (its defaults), so a list the same as the previous
// topic's is counted once.
func createTopicsSize(r *kmsg.CreateTopicsResponse) int {
	v := r.Version
	if v < 0 || v > 7 || r.UnknownTags.Len() > 0 {
		return -1
	}
	flexible := v >= 5
	n := arrayLenSize(len(r.Topics), flexible)
	if v >= 2 {
		n += 4 // ThrottleMillis
	}
	if flexible {
		n++ // no tagged fields
	}
	var last []kmsg.CreateTopicsResponseTopicConfig
	lastSize := -1
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return -1
		}
		n += stringSize(len(t.Topic), flexible) + 2 // name, ErrorCode
		if v >= 7 {
			n += 16 // TopicID
		}
		if v >= 1 {
			n += nullableStringSize(t.ErrorMessage, flexible)
		}
		if v < 5 {
			continue
		}
		n += 4 + 2 // NumPartitions, ReplicationFactor
		if t.Configs == nil {
			n++ // a null array
		} else {
			n += arrayLenSize(len(t.Configs), true)
		}
		// The tagged fields: their count, and ConfigErrorCode (tag 0) as
		// tag, length and int16 when it is not 0.
		n++
		if t.ConfigErrorCode != 0 {
			n += 1 + 1 + 2
		}
		if lastSize < 0 || !sameSlice(t.Configs, last) {
			last, lastSize = t.Configs, 0
			for j := range t.Configs {
				c := &t.Configs[j]
				if c.UnknownTags.Len() > 0 {
					return -1
				}
				// Name, Value, ReadOnly, Source, IsSensitive, no tags.
				lastSize += stringSize(len(c.Name), true) + nullableStringSize(c.Value, true) + 1 + 1 + 1 + 1
			}
		}
		n += lastSize
	}
	return n
}

// stringSize is the encoded size of a string of n bytes: an int16 length,
// or in a flexible version a uvarint of n+1.
func stringSize(n int, flexible bool) int {
	if flexible {
		return uvarintSize(uint32(n)+1) + n
	}
	return 2 + n
}

// nullableStringSize is the encoded size of s, null as length -1 (or 0 in
// a flexible version).
func nullableStringSize(s *string, flexible bool) int {
	if s == nil {
		if flexible {
			return 1
		}
		return 2
	}
	return stringSize(len(*s), flexible)
}

// arrayLenSize is the encoded size of an array's length: an int32, or in a
// flexible version a uvarint of n+1.
func arrayLenSize(n int, flexible bool) int {
	if flexible {
		return uvarintSize(uint32(n) + 1)
	}
	return 4
}

// uvarintSize is how many bytes a uvarint of x takes: one per 7 bits.
func uvarintSize(x uint32) int {
	return max(1, (bits.Len32(x)+6)/7)
}

// sameSlice reports whether a and b are the same elements of one array.
func sameSlice[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
