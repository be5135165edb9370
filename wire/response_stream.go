package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// **create-topics-answer-streamed** (issue 22): Kafka's CreateTopics
// answer (v5+) lists every config of every created topic, about 830 bytes
// a topic: 0.8 MB for a request of 1,000. Built whole, such an answer
// needs a buffer that size, and on a fresh broker that is fresh memory:
// every 4 KiB page of it is a page fault the first time it is written
// (some 16 µs each on a virtual machine), and grown step by step by
// append it was 4 MB of them. On a fresh broker those faults were most
// of the cost of its first CreateTopics per topic, about twice kfake's,
// whose answer lists only the configs set.
//
// So a large CreateTopics answer is written in pieces through the
// connection's buffer: its size worked out first from its lengths
// (responseBodySize), the frame's size and header written, then the
// topics encoded by kmsg a group at a time and written whenever
// streamPiece bytes are waiting. The bytes on the wire are the ones
// AppendResponse makes (response_stream_test.go compares them); only
// their buffer is smaller.

// streamPiece is about how many bytes of a streamed answer are written at
// a time; it is also the smallest answer that streams (smaller ones are
// written in one piece).
const streamPiece = 64 << 10

// streamTopics is how many topics kmsg encodes at a time.
const streamTopics = 16

// WriteResponse writes resp's whole frame (as AppendResponse makes it) to
// w, using buf as its buffer, and returns buf (grown, for the next
// answer) with the error of the write. A large answer that streams goes
// out in pieces of about streamPiece bytes (create-topics-answer-streamed);
// any other in one Write.
func WriteResponse(w io.Writer, buf []byte, correlationID int32, resp kmsg.Response) ([]byte, error) {
	bodySize := responseBodySize(resp)
	if r, ok := resp.(*kmsg.CreateTopicsResponse); ok && bodySize >= streamPiece {
		return writeCreateTopics(w, buf[:0], correlationID, r, bodySize)
	}
	buf = appendResponse(buf[:0], correlationID, resp, bodySize)
	_, err := w.Write(buf)
	return buf, err
}

// writeCreateTopics streams r, whose body takes bodySize bytes. The body
// is kmsg's: ThrottleMillis (v2+), the topics' count, each topic as kmsg
// encodes it in a CreateTopicsResponse of a few (that answer's own
// throttle and count cut off the front, and its empty tagged fields off
// the end), and the answer's empty tagged fields (v5+).
func writeCreateTopics(w io.Writer, buf []byte, correlationID int32, r *kmsg.CreateTopicsResponse, bodySize int) ([]byte, error) {
	flexible := r.Version >= 5
	throttle, tags := 0, 0
	if r.Version >= 2 {
		throttle = 4
	}
	if flexible {
		tags = 1
	}
	frameSize := responseHeaderSize(r) + bodySize
	buf, start := appendResponseHeader(buf, correlationID, r)
	binary.BigEndian.PutUint32(buf[start:], uint32(frameSize-4))
	if r.Version >= 2 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.ThrottleMillis))
	}
	buf = appendArrayLen(buf, len(r.Topics), flexible)

	written := 0
	group := kmsg.CreateTopicsResponse{Version: r.Version}
	for i := 0; i < len(r.Topics); i += streamTopics {
		group.Topics = r.Topics[i:min(i+streamTopics, len(r.Topics))]
		at := len(buf)
		buf = group.AppendTo(buf)
		from := at + throttle + arrayLenSize(len(group.Topics), flexible)
		buf = append(buf[:at], buf[from:len(buf)-tags]...)
		if len(buf) >= streamPiece {
			n, err := w.Write(buf)
			written += n
			if err != nil {
				return buf, err
			}
			buf = buf[:0]
		}
	}
	if flexible {
		buf = append(buf, 0) // the answer's tagged fields: none
	}
	n, err := w.Write(buf)
	written += n
	if err == nil && written != frameSize {
		// The frame's size promised other bytes than were written: the
		// stream is no longer aligned, and only closing it is safe.
		err = fmt.Errorf("wire: a CreateTopics v%d answer of %d bytes was written as %d", r.Version, frameSize, written)
	}
	return buf, err
}
