package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/clientframes"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/wire"
)

// logLine is one captured log record with its attributes as strings,
// including those added with Logger.With.
type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logSink collects every log line of a broker, for tests to assert on.
type logSink struct {
	mu      sync.Mutex
	lines   []logLine
	changed chan struct{} // gets a token after each new line; nil until waitFor
}

// waitFor blocks until a line satisfies match or ioTimeout passes.
func (s *logSink) waitFor(match func(logLine) bool) (logLine, bool) {
	s.mu.Lock()
	if s.changed == nil {
		s.changed = make(chan struct{}, 1)
	}
	changed := s.changed
	s.mu.Unlock()
	timeout := time.After(ioTimeout)
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			if match(l) {
				s.mu.Unlock()
				return l, true
			}
		}
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			return logLine{}, false
		}
	}
}

func (s *logSink) logger() *slog.Logger { return slog.New(&captureHandler{sink: s}) }

// forConn returns the lines logged for the connection whose client-side
// address is addr, leaving out its opened and closed-by-client lines.
func (s *logSink) forConn(addr string) []logLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logLine
	for _, l := range s.lines {
		if l.attrs["conn"] != addr || l.msg == "connection opened" || l.msg == "connection closed by client" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// count returns how many lines have the message msg.
func (s *logSink) count(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if l.msg == msg {
			n++
		}
	}
	return n
}

func (s *logSink) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sb strings.Builder
	for _, l := range s.lines {
		fmt.Fprintf(&sb, "%s %q %v\n", l.level, l.msg, l.attrs)
	}
	return sb.String()
}

type captureHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	l := logLine{level: r.Level, msg: r.Message, attrs: make(map[string]string)}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	h.sink.mu.Lock()
	h.sink.lines = append(h.sink.lines, l)
	if h.sink.changed != nil {
		select {
		case h.sink.changed <- struct{}{}:
		default:
		}
	}
	h.sink.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &captureHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

// rawHeader builds a v1 request header.
func rawHeader(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 3)
	return append(b, "raw"...)
}

func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// recordBatch encodes a magic-2 batch of one record per timestamp, with
// the given compression; the CRC is right unless corrupt is set.
func recordBatch(tsMs []int64, codec int8, compress func([]byte) []byte, corrupt bool) []byte {
	spec := batchtest.Stamped(tsMs...)
	spec.Codec, spec.Compress, spec.CorruptCRC = codec, compress, corrupt
	return spec.Build()
}

// produceRequest builds a Produce v9 request of one batch to topic/0.
func produceRequest(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// healthyClient is a kgo client that produces and consumes one topic; its
// check proves the broker still serves other connections.
type healthyClient struct {
	cl    *kgo.Client
	topic string
	n     int
}

func newHealthyClient(t *testing.T, addr, topic string) *healthyClient {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	h := &healthyClient{cl: cl, topic: topic}
	h.check(t)
	return h
}

// check produces one record and fetches it.
func (h *healthyClient) check(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := fmt.Sprintf("healthy %d", h.n)
	h.n++
	if err := h.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(want)}).FirstErr(); err != nil {
		t.Fatalf("healthy client: produce: %v", err)
	}
	for {
		fs := h.cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("healthy client: fetch: %v", err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == want })
		if found {
			return
		}
	}
}

func TestBadInput(t *testing.T) {
	const maxRequest = 64 << 10
	sink := &logSink{}
	b, addr := startBroker(t, broker.Config{
		Logger: sink.logger(),
		Props:  map[string]string{"socket.request.max.bytes": fmt.Sprint(maxRequest)},
	})
	_ = b
	healthy := newHealthyClient(t, addr, "healthy")
	t.Cleanup(func() {
		if n := sink.count("handler panicked"); n != 0 {
			t.Errorf("%d handler panics:\n%s", n, sink.dump())
		}
	})

	metadataV4 := func() []byte {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 4
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("healthy")
		req.Topics = append(req.Topics, rt)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 1)
	}

	tests := []struct {
		name      string
		run       func(t *testing.T, c *rawConn)
		closes    bool
		wantMsg   string
		wantLevel slog.Level
		wantErr   string // in the line's err attribute
	}{
		{
			name:    "garbage bytes",
			run:     func(t *testing.T, c *rawConn) { c.write([]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3}) },
			closes:  true,
			wantMsg: "closing connection: unreadable frame", wantLevel: slog.LevelWarn, wantErr: "positive",
		},
		{
			name:    "HTTP request",
			run:     func(t *testing.T, c *rawConn) { c.write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) },
			closes:  true,
			wantMsg: "closing connection: unreadable frame", wantLevel: slog.LevelWarn, wantErr: "HTTP",
		},
		{
			name:    "TLS client hello",
			run:     func(t *testing.T, c *rawConn) { c.write([]byte{0x16, 0x03, 0x01, 0x00, 0xa5, 0x01}) },
			closes:  true,
			wantMsg: "closing connection: unreadable frame", wantLevel: slog.LevelWarn, wantErr: "TLS",
		},
		{
			name: "frame over socket.request.max.bytes",
			run: func(t *testing.T, c *rawConn) {
				c.write(binary.BigEndian.AppendUint32(nil, maxRequest+1))
			},
			closes:  true,
			wantMsg: "closing connection: unreadable frame", wantLevel: slog.LevelWarn, wantErr: "socket.request.max.bytes",
		},
		{
			name: "truncated frame then close",
			run: func(t *testing.T, c *rawConn) {
				f := metadataV4()
				c.write(f[:len(f)/2])
				c.nc.(*net.TCPConn).CloseWrite()
			},
			closes:  true,
			wantMsg: "closing connection: frame cut short", wantLevel: slog.LevelWarn, wantErr: "unexpected EOF",
		},
		{
			name:    "header cut short",
			run:     func(t *testing.T, c *rawConn) { c.write(sized([]byte{0, 3, 0, 4, 0})) },
			closes:  true,
			wantMsg: "closing connection: malformed request header", wantLevel: slog.LevelWarn, wantErr: "cut short",
		},
		{
			name:    "unknown API key",
			run:     func(t *testing.T, c *rawConn) { c.write(sized(rawHeader(32000, 0, 1))) },
			closes:  true,
			wantMsg: "closing connection: unsupported API or version", wantLevel: slog.LevelWarn, wantErr: "not advertised",
		},
		{
			name:    "Metadata at an unknown version",
			run:     func(t *testing.T, c *rawConn) { c.write(sized(rawHeader(3, 99, 1))) },
			closes:  true,
			wantMsg: "closing connection: unsupported API or version", wantLevel: slog.LevelWarn, wantErr: "not advertised",
		},
		{
			name: "Produce below the served range",
			run: func(t *testing.T, c *rawConn) {
				req := produceRequest("healthy", recordBatch([]int64{1}, 0, nil, false))
				req.Version = 2
				c.write(c.frame(req))
			},
			closes:  true,
			wantMsg: "closing connection: unsupported API or version", wantLevel: slog.LevelWarn, wantErr: "not advertised",
		},
		{
			name: "API kmsg knows but we do not serve",
			run: func(t *testing.T, c *rawConn) {
				// A single node has no leaders to elect: never served.
				req := kmsg.NewPtrElectLeadersRequest()
				req.Version = 1
				c.write(c.frame(req))
			},
			closes:  true,
			wantMsg: "closing connection: unsupported API or version", wantLevel: slog.LevelWarn, wantErr: "not advertised",
		},
		{
			name: "malformed body",
			run: func(t *testing.T, c *rawConn) {
				// Metadata v4: a topic array of 5 entries, then nothing.
				c.write(sized(append(rawHeader(3, 4, 1), 0, 0, 0, 5)))
			},
			closes:  true,
			wantMsg: "closing connection: malformed request body", wantLevel: slog.LevelWarn, wantErr: "malformed",
		},
		{
			name: "ApiVersions at an unknown version",
			run: func(t *testing.T, c *rawConn) {
				c.Corr = 41
				c.write(sized(append(rawHeader(18, 999, 41), 0, 0, 0)))
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.Version = 0
				c.readResponse(resp)
				if resp.ErrorCode != kerr.UnsupportedVersion.Code {
					t.Fatalf("error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
				}
				keys := make(map[int16]bool)
				for _, k := range resp.ApiKeys {
					keys[k.ApiKey] = true
				}
				for _, k := range []int16{0, 1, 2, 3, 18} {
					if !keys[k] {
						t.Fatalf("key %d missing from the v0 answer: %+v", k, resp.ApiKeys)
					}
				}
			},
			wantMsg: "answering ApiVersions at v0: version not served", wantLevel: slog.LevelDebug,
		},
		{
			name: "produce batch with a bad CRC",
			run: func(t *testing.T, c *rawConn) {
				resp := c.request(produceRequest("healthy", recordBatch([]int64{1, 2}, 0, nil, true))).(*kmsg.ProduceResponse)
				if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.CorruptMessage.Code {
					t.Fatalf("error code %d, want CORRUPT_MESSAGE (2)", got)
				}
			},
			wantMsg: "produce rejected", wantLevel: slog.LevelInfo, wantErr: "CRC",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			tc.run(t, c)
			if tc.closes {
				c.expectClosed()
			} else {
				c.expectOpen()
			}
			lines := sink.forConn(c.addr())
			if len(lines) != 1 {
				t.Fatalf("%d log lines for the connection, want 1:\n%s", len(lines), sink.dump())
			}
			l := lines[0]
			if l.msg != tc.wantMsg || l.level != tc.wantLevel || !strings.Contains(l.attrs["err"], tc.wantErr) {
				t.Fatalf("logged %s %q err=%q; want %s %q err containing %q", l.level, l.msg, l.attrs["err"],
					tc.wantLevel, tc.wantMsg, tc.wantErr)
			}
			healthy.check(t)
		})
	}
}

// TestBadInputStormKeepsServing opens many bad connections at once while
// the healthy client works: every bad one is closed and nothing panics.
func TestBadInputStormKeepsServing(t *testing.T) {
	sink := &logSink{}
	_, addr := startBroker(t, broker.Config{Logger: sink.logger()})
	healthy := newHealthyClient(t, addr, "storm")
	inputs := [][]byte{
		{0xff, 0xff, 0xff, 0xff},
		sized(rawHeader(32000, 0, 1)),
		sized(append(rawHeader(3, 4, 1), 0x7f, 0xff, 0xff, 0xff)),
		sized(append(rawHeader(0, 9, 1), bytes.Repeat([]byte{0xff}, 40)...)),
		sized(append(rawHeader(1, 12, 1), bytes.Repeat([]byte{0x80}, 40)...)),
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(inputs))
	for range 4 {
		for _, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := net.DialTimeout("tcp", addr, ioTimeout)
				if err != nil {
					errs <- err
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(ioTimeout))
				if _, err := nc.Write(in); err != nil {
					errs <- err
					return
				}
				if n, err := nc.Read(make([]byte, 16)); n != 0 || !rawconn.IsClosed(err) {
					errs <- fmt.Errorf("input %x: read %d bytes, %v; want the connection closed", in[:min(len(in), 16)], n, err)
				}
			}()
		}
	}
	healthy.check(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	healthy.check(t)
	if n := sink.count("handler panicked"); n != 0 {
		t.Fatalf("%d handler panics:\n%s", n, sink.dump())
	}
}

// loadCapturedFrames reads the client frames in ../testdata/frames (size
// prefix included), keyed by "<client>/<file>".
func loadCapturedFrames(t *testing.T) map[string][]byte {
	t.Helper()
	frames, err := clientframes.Load(filepath.Join("..", "testdata", "frames"))
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// noLongPoll rewrites a captured Fetch frame to wait 0 ms for 0 bytes and
// returns it with the number of leading bytes (header and the fixed fields
// up to MinBytes) that mutations must leave alone, so that no mutant can
// make the broker hold the connection in a long poll.
func noLongPoll(t *testing.T, frame []byte) ([]byte, int) {
	h, body, err := wire.ParseHeader(frame[4:])
	if err != nil || h.APIKey != 1 {
		return frame, 4
	}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		t.Fatalf("captured fetch does not decode: %v", err)
	}
	fetch := req.(*kmsg.FetchRequest)
	fetch.MaxWaitMillis, fetch.MinBytes = 0, 0
	headerLen := len(frame) - 4 - len(body)
	out := append(append([]byte(nil), frame[:4+headerLen]...), fetch.AppendTo(nil)...)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	fixed := 8 // MaxWaitMillis, MinBytes
	if h.APIVersion < 15 {
		fixed += 4 // ReplicaID first
	}
	return out, 4 + headerLen + fixed
}

// TestMutatedClientFrames sends every captured client frame with each byte
// changed in turn, one mutant per request, each followed by an ApiVersions
// request. Whatever the mutant does to its connection (an answer, an error,
// a close), the broker must not panic and must keep serving.
func TestMutatedClientFrames(t *testing.T) {
	sink := &logSink{}
	_, addr := startBroker(t, broker.Config{Logger: sink.logger()})
	setup := dialRaw(t, addr)
	for _, topic := range []string{"frames-kgo", "frames-sarama", "frames-kafka-go", "frames-librdkafka", "frames-kafka-python"} {
		createTopic(t, setup, topic)
	}
	probe := kmsg.NewPtrApiVersionsRequest()
	probe.Version = 0
	const probeCorr = 0x7eadbeef
	probeFrame := kmsg.NewRequestFormatter().AppendRequest(nil, probe, probeCorr)

	var c *rawConn
	sent, closed := 0, 0
	for name, frame := range loadCapturedFrames(t) {
		if strings.HasPrefix(filepath.Base(name), "join_group-") {
			// A JoinGroup rightly waits until the group rebalances, up to
			// the rebalance timeout in the frame (minutes), and every
			// mutant that still joins adds a member the next must wait
			// for: the probe behind it would time out. Decoding them is
			// left to the wire tests and fuzz seeds.
			continue
		}
		frame, keep := noLongPoll(t, frame)
		for i := keep; i < len(frame); i++ {
			for _, mutate := range []func(byte) byte{func(b byte) byte { return b ^ 0xff }, func(b byte) byte { return b + 1 }} {
				mutant := append([]byte(nil), frame...)
				mutant[i] = mutate(mutant[i])
				if c == nil {
					c = dialRaw(t, addr)
				}
				c.write(append(mutant, probeFrame...))
				sent++
				if !c.awaitCorrelation(probeCorr) {
					c.nc.Close()
					c = nil
					closed++
				}
				if t.Failed() {
					t.Fatalf("%s, byte %d mutated", name, i)
				}
			}
		}
	}
	t.Logf("%d mutants sent, %d closed their connection", sent, closed)
	if n := sink.count("handler panicked"); n != 0 {
		t.Fatalf("%d handler panics:\n%s", n, sink.dump())
	}
	// Still serving.
	newHealthyClient(t, addr, "after-mutants")
}

// awaitCorrelation reads responses until one answers corr (true) or the
// broker closes the connection (false); every read is bounded.
func (c *rawConn) awaitCorrelation(corr int32) bool {
	c.t.Helper()
	for {
		c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		body, err := wire.ReadFrame(c.nc, c.Limit)
		switch {
		case rawconn.IsClosed(err):
			return false
		case err != nil:
			c.t.Errorf("waiting for correlation ID %d: %v", corr, err)
			return false
		case len(body) >= 4 && int32(binary.BigEndian.Uint32(body)) == corr:
			return true
		}
	}
}

// TestClientResetIsNotAWarning resets a connection (SO_LINGER 0): the
// client did nothing wrong, so the broker notes it at debug level only.
func TestClientResetIsNotAWarning(t *testing.T) {
	sink := &logSink{}
	_, addr := startBroker(t, broker.Config{Logger: sink.logger()})
	c := dialRaw(t, addr)
	c.expectOpen() // the broker's reader is now blocked on this connection
	local := c.addr()
	c.nc.(*net.TCPConn).SetLinger(0)
	c.nc.Close()
	l, ok := sink.waitFor(func(l logLine) bool {
		return l.attrs["conn"] == local && l.msg != "connection opened"
	})
	if !ok {
		t.Fatalf("nothing logged for the reset connection:\n%s", sink.dump())
	}
	if l.level != slog.LevelDebug || l.msg != "connection reset by client" {
		t.Fatalf("logged %s %q %v", l.level, l.msg, l.attrs)
	}
}
