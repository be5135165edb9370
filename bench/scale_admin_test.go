package bench_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topics sweep (issue 22): how the cost of answering about topics
// grows with how many there are. Each point starts a fresh broker of each
// peer in a child process (processPeers), so server-cpu-ns/topic is the
// broker's own CPU (childBroker.cpu), and talks to it over one raw
// connection (rawConn), so no client library's decoding is in the wall
// time.
//
//   - BenchmarkScaleMetadata: N one-partition topics are created (not
//     timed), then Metadata for all topics is asked scaleMetadataRounds
//     times after one warm-up. ns/topic is the median request's wall time
//     over N; server-cpu-ns/topic the broker's CPU over all those requests
//     over rounds × N.
//   - BenchmarkScaleCreateTopics: N one-partition topics are created in
//     requests of scaleCreateBatch, one after the other. ns/topic is the
//     wall time of their round trips over N, server-cpu-ns/topic the
//     broker's CPU from the first request to the last answer over N.
//     Both peers get the same frames, but not the same answer to send:
//     Kafka's, and so sharebroker's, lists every config of every topic
//     (835 bytes a topic), kfake's only those set (42 bytes), and the
//     round trip includes moving those bytes to the client and its
//     reading them. On a fresh process most of either broker's cost at
//     1,000 topics is first-touch page faults of the memory a request
//     allocates (docs/log.md create-topics-answer-streamed).
//
// kfake's child seeds the bench topic, one more than sharebroker has; at
// 1,000 topics and up that is at most 0.1% of the answer.
const (
	// scaleMetadataRounds Metadata requests are timed per op; the median
	// is reported.
	scaleMetadataRounds = 9
	// scaleCreateBatch is how many topics one CreateTopics request
	// creates.
	scaleCreateBatch = 1000
	// Both peers answer these versions (kfake: Metadata 0-13,
	// CreateTopics 0-7).
	scaleMetadataVersion     = 12
	scaleCreateTopicsVersion = 7
)

func BenchmarkScaleMetadata(b *testing.B) {
	skipUnlessScale(b)
	for _, n := range scalePoints(b, "TOPICS", 1000, 3000, 10000, 20000) {
		for _, p := range processPeers {
			b.Run(fmt.Sprintf("topics=%d/%s", n, p.name), func(b *testing.B) { benchScaleMetadata(b, p, n) })
		}
	}
}

func BenchmarkScaleCreateTopics(b *testing.B) {
	skipUnlessScale(b)
	for _, n := range scalePoints(b, "TOPICS", 1000, 3000, 10000, 20000) {
		for _, p := range processPeers {
			b.Run(fmt.Sprintf("topics=%d/%s", n, p.name), func(b *testing.B) { benchScaleCreateTopics(b, p, n) })
		}
	}
}

func benchScaleMetadata(b *testing.B, p processPeer, topics int) {
	var (
		walls     []time.Duration
		serverCPU time.Duration
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := p.start(b)
		c := dialRaw(b, child.addr)
		createScaleTopics(b, c, topics)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = scaleMetadataVersion
		req.Topics = nil // all topics
		frame := appendFrame(nil, req)
		if err := checkMetadataAll(c, frame, req, topics); err != nil { // the warm-up
			child.stop()
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := child.cpu(b)
		for r := 0; r < scaleMetadataRounds; r++ {
			start := time.Now()
			_, err := c.roundTrip(frame)
			walls = append(walls, time.Since(start))
			if err != nil {
				child.stop()
				b.Fatalf("metadata: %v", err)
			}
		}
		serverCPU += child.cpu(b) - cpu0
		b.StopTimer()
		c.nc.Close()
		child.stop()
	}
	slices.Sort(walls)
	n := float64(topics)
	b.ReportMetric(float64(walls[len(walls)/2].Nanoseconds())/n, "ns/topic")
	b.ReportMetric(float64(serverCPU.Nanoseconds())/(n*float64(len(walls))), "server-cpu-ns/topic")
}

func benchScaleCreateTopics(b *testing.B, p processPeer, topics int) {
	var elapsed, serverCPU time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := p.start(b)
		c := dialRaw(b, child.addr)
		// The connection exists and the broker has answered once before
		// the clock starts.
		if _, err := c.roundTrip(appendFrame(nil, kmsg.NewPtrApiVersionsRequest())); err != nil {
			child.stop()
			b.Fatalf("api versions: %v", err)
		}
		b.StartTimer()
		cpu0 := child.cpu(b)
		elapsed += createScaleTopics(b, c, topics)
		serverCPU += child.cpu(b) - cpu0
		b.StopTimer()
		c.nc.Close()
		child.stop()
	}
	n := float64(topics) * float64(b.N)
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/topic")
	b.ReportMetric(float64(serverCPU.Nanoseconds())/n, "server-cpu-ns/topic")
}

// createScaleTopics creates topics one-partition topics named
// scale-000000, scale-000001, ... in requests of scaleCreateBatch, fails b
// unless every one was created, and returns the time the round trips
// took: building the requests and decoding the answers are left out, so
// a peer whose answer says more (Kafka's CreateTopics v5+ lists every
// topic config; kfake only the ones set) is not charged our decoding of
// it.
func createScaleTopics(b *testing.B, c *rawConn, topics int) time.Duration {
	b.Helper()
	return createScaleTopicsFrom(b, c, 0, topics)
}

// createScaleTopicsFrom is createScaleTopics starting at scale-<first>.
func createScaleTopicsFrom(b *testing.B, c *rawConn, first, topics int) time.Duration {
	b.Helper()
	var frame []byte
	var took time.Duration
	for from := first; from < first+topics; from += scaleCreateBatch {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = scaleCreateTopicsVersion
		req.TimeoutMillis = 60_000
		for i := from; i < min(from+scaleCreateBatch, first+topics); i++ {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("scale-%06d", i), 1, 1
			req.Topics = append(req.Topics, t)
		}
		frame = appendFrame(frame[:0], req)
		start := time.Now()
		body, err := c.roundTrip(frame)
		took += time.Since(start)
		if err != nil {
			b.Fatalf("create topics: %v", err)
		}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		if err := resp.ReadFrom(responseBody(body, req)); err != nil {
			b.Fatalf("create topics response: %v", err)
		}
		if len(resp.Topics) != len(req.Topics) {
			b.Fatalf("create topics: %d answers to %d topics", len(resp.Topics), len(req.Topics))
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				b.Fatalf("create topic %s: %v", t.Topic, err)
			}
		}
	}
	return took
}

// checkMetadataAll sends the all-topics Metadata frame and checks that the
// answer lists at least topics topics without error.
func checkMetadataAll(c *rawConn, frame []byte, req *kmsg.MetadataRequest, topics int) error {
	body, err := c.roundTrip(frame)
	if err != nil {
		return fmt.Errorf("metadata: %v", err)
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := resp.ReadFrom(responseBody(body, req)); err != nil {
		return fmt.Errorf("metadata response: %v", err)
	}
	if len(resp.Topics) < topics {
		return fmt.Errorf("metadata lists %d topics, want at least %d", len(resp.Topics), topics)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("metadata of %v: %v", t.Topic, err)
		}
	}
	return nil
}

// responseBody strips the response header (the correlation ID, and the
// tagged fields of a flexible version) from a response frame's body.
func responseBody(body []byte, req kmsg.Request) []byte {
	body = body[4:]
	if req.IsFlexible() {
		body = body[1:] // no tagged fields in the header: a zero count
	}
	return body
}
