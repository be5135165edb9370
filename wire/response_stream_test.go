package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomCreateTopicsResponse builds a CreateTopics answer of n topics with
// the fields the broker fills, at random: names and values on both sides
// of a uvarint's one-byte limit, null and set messages and values, null,
// empty and set config lists, ConfigErrorCode or not, and runs of topics
// sharing one config list as the broker's defaults are shared.
func randomCreateTopicsResponse(rng *rand.Rand, version int16, n int) *kmsg.CreateTopicsResponse {
	str := func() string { return strings.Repeat("x", []int{0, 1, 126, 127, 128, 300}[rng.IntN(6)]) }
	shared := make([]kmsg.CreateTopicsResponseTopicConfig, 40)
	for i := range shared {
		shared[i].Name, shared[i].Value = fmt.Sprintf("config.%d", i), kmsg.StringPtr(str())
	}
	r := kmsg.NewPtrCreateTopicsResponse()
	r.Version, r.ThrottleMillis = version, rng.Int32()
	for i := range n {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = fmt.Sprintf("t%d-%s", i, str())
		t.TopicID[0] = byte(i)
		t.ErrorCode = int16(rng.IntN(3))
		if rng.IntN(2) == 0 {
			t.ErrorMessage = kmsg.StringPtr(str())
		}
		t.NumPartitions, t.ReplicationFactor = rng.Int32(), int16(rng.IntN(3))
		switch rng.IntN(5) {
		case 0:
			t.Configs = nil
		case 1:
			t.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		case 2:
			for j := range rng.IntN(3) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name, c.ReadOnly, c.Source, c.IsSensitive = fmt.Sprintf("c%d%s", j, str()), rng.IntN(2) == 0, int8(rng.IntN(6)), rng.IntN(2) == 0
				if rng.IntN(3) > 0 {
					c.Value = kmsg.StringPtr(str())
				}
				t.Configs = append(t.Configs, c)
			}
		default:
			t.Configs = shared
		}
		if rng.IntN(4) == 0 {
			t.ConfigErrorCode = 29
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// TestCreateTopicsBodySize checks that the size worked out from an
// answer's lengths is exactly what kmsg encodes, for every version and on
// both sides of the one-byte uvarint limits (create-topics-answer-streamed:
// the frame's size is written from it).
func TestCreateTopicsBodySize(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 19))
	for v := int16(0); v <= 7; v++ {
		for _, n := range []int{0, 1, 2, 126, 127, 128, 400} {
			for range 5 {
				r := randomCreateTopicsResponse(rng, v, n)
				if got, want := responseBodySize(r), len(r.AppendTo(nil)); got != want {
					t.Fatalf("v%d, %d topics: size %d, kmsg encodes %d bytes", v, n, got, want)
				}
			}
		}
	}
}

// TestCreateTopicsBodySizeUnknownTags: an answer carrying tagged fields we
// do not know is not counted, so it is built whole as before.
func TestCreateTopicsBodySizeUnknownTags(t *testing.T) {
	r := randomCreateTopicsResponse(rand.New(rand.NewPCG(1, 2)), 7, 3)
	r.Topics[1].UnknownTags.Set(9, []byte{1})
	if got := responseBodySize(r); got != -1 {
		t.Fatalf("size %d of an answer with unknown tags, want -1", got)
	}
}

// pieceWriter records each Write's length and the bytes written.
type pieceWriter struct {
	bytes.Buffer
	pieces []int
	fail   error
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	w.pieces = append(w.pieces, len(p))
	return w.Buffer.Write(p)
}

// TestWriteResponseStreamsCreateTopics (create-topics-answer-streamed): a
// large CreateTopics answer leaves in pieces of about streamPiece bytes,
// through a buffer that stays that small, and the bytes are exactly the
// frame AppendResponse builds whole, in every version; a small one leaves
// in one write.
func TestWriteResponseStreamsCreateTopics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for v := int16(0); v <= 7; v++ {
		for _, n := range []int{3, 1000} {
			r := randomCreateTopicsResponse(rng, v, n)
			want := AppendResponse(nil, 4321, r)
			var w pieceWriter
			buf, err := WriteResponse(&w, make([]byte, 0, 512), 4321, r)
			if err != nil {
				t.Fatalf("v%d, %d topics: %v", v, n, err)
			}
			if !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("v%d, %d topics: streamed %d bytes differ from the %d-byte frame", v, n, w.Len(), len(want))
			}
			if len(want) < streamPiece {
				if len(w.pieces) != 1 {
					t.Fatalf("v%d, %d topics: a %d-byte answer in %d writes, want 1", v, n, len(want), len(w.pieces))
				}
				continue
			}
			// Each piece is streamPiece plus at most one group of topics
			// (these topics take at most some 20 KB each).
			limit := streamPiece + streamTopics*20<<10
			if len(w.pieces) < 2 || cap(buf) > limit {
				t.Fatalf("v%d, %d topics: a %d-byte answer in %d writes through a buffer of %d, want several through at most %d", v, n, len(want), len(w.pieces), cap(buf), limit)
			}
			for _, p := range w.pieces {
				if p > limit {
					t.Fatalf("v%d, %d topics: a piece of %d bytes, want at most %d", v, n, p, limit)
				}
			}
		}
	}
}

// TestWriteResponseStreamWriteError: a failed write of a streamed answer
// is reported, so the connection closes.
func TestWriteResponseStreamWriteError(t *testing.T) {
	r := randomCreateTopicsResponse(rand.New(rand.NewPCG(3, 4)), 7, 1000)
	broken := errors.New("broken pipe")
	if _, err := WriteResponse(&pieceWriter{fail: broken}, nil, 1, r); !errors.Is(err, broken) {
		t.Fatalf("error %v, want %v", err, broken)
	}
}
