package wire

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// byteSource is a RecordSource over bytes in memory, standing in for a
// segment file's section.
type byteSource struct{ b []byte }

func (s byteSource) Len() int { return len(s.b) }
func (s byteSource) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.b)
	return int64(n), err
}

// writeFrameForTest writes segs and srcs as the broker does: each nil
// segment is the next source's bytes.
func writeFrameForTest(segs [][]byte, srcs []RecordSource) []byte {
	var out bytes.Buffer
	for _, s := range segs {
		if s == nil {
			srcs[0].WriteTo(&out)
			srcs = srcs[1:]
			continue
		}
		out.Write(s)
	}
	return out.Bytes()
}

// fetch-from-files: an answer whose records partly come from sources
// (records left in segment files) encodes byte for byte as kmsg encodes
// the same records held in memory, both when spliced (AppendFrame, the
// sources written in place) and when encoded through kmsg (AppendTo,
// which reads the sources in).
func TestFetchResponseSourcesMatchKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	spliced, joined := 0, 0
	for version := int16(4); version <= (&kmsg.FetchResponse{}).MaxVersion(); version++ {
		for range 50 {
			resp := randomFetchResponse(rng, version)
			EmptyFetchRecordSets(resp) // as the broker does before encoding
			want := AppendResponse(nil, 777, resp)
			r := &FetchResponse{FetchResponse: *resp}
			for i := range r.Topics {
				for j := range r.Topics[i].Partitions {
					p := &r.Topics[i].Partitions[j]
					if len(p.RecordBatches) > 0 && rng.IntN(2) == 0 {
						src := byteSource{p.RecordBatches}
						p.RecordBatches = r.Source(i, j, src)
					}
				}
			}
			EmptyFetchRecordSets(&r.FetchResponse)
			buf, segs, srcs, ok := r.AppendFrame(nil, nil, 777)
			if ok {
				spliced++
				if got := writeFrameForTest(segs, srcs); !bytes.Equal(got, want) {
					t.Fatalf("v%d: spliced answer with %d sources differs from kmsg's", version, len(srcs))
				}
				continue
			}
			if len(buf) != 0 || len(segs) != 0 || len(srcs) != 0 {
				t.Fatalf("v%d: declined but returned %d bytes, %d segments, %d sources", version, len(buf), len(segs), len(srcs))
			}
			joined++
			if got := AppendResponse(nil, 777, r); !bytes.Equal(got, want) {
				t.Fatalf("v%d: answer with sources encoded through kmsg differs", version)
			}
		}
	}
	if spliced == 0 || joined == 0 {
		t.Fatalf("%d spliced, %d joined: the test must see both", spliced, joined)
	}
}
