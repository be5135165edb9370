package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// encodeRequest returns req as kmsg frames it for a client, without the
// 4-byte size prefix: the bytes ParseHeader receives.
func encodeRequest(req kmsg.Request, clientID *string, correlationID int32) []byte {
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	return kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, correlationID)[4:]
}

// rawHeader builds a v1 request header by hand.
func rawHeader(key, version int16, correlationID int32, clientIDLen int16, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(clientIDLen))
	return append(b, clientID...)
}

func ptr(s string) *string { return &s }

func TestParseHeader(t *testing.T) {
	metaV4 := kmsg.NewPtrMetadataRequest()
	metaV4.Version = 4 // not flexible: header v1
	metaV12 := kmsg.NewPtrMetadataRequest()
	metaV12.Version = 12 // flexible: header v2
	apiV3 := kmsg.NewPtrApiVersionsRequest()
	apiV3.Version = 3
	apiV3.ClientSoftwareName, apiV3.ClientSoftwareVersion = "t", "1"

	flexHeader := rawHeader(3, 12, 9, 2, "id")
	tests := []struct {
		name         string
		frame        []byte
		want         wire.Header
		wantBody     []byte // nil: do not check
		wantErr      error
		wantNoHeader bool // the error leaves no usable header
	}{
		{
			name:     "v1 header",
			frame:    encodeRequest(metaV4, ptr("client-a"), 7),
			want:     wire.Header{APIKey: 3, APIVersion: 4, CorrelationID: 7, ClientID: "client-a"},
			wantBody: metaV4.AppendTo(nil),
		},
		{
			name:     "v2 header",
			frame:    encodeRequest(metaV12, ptr("client-b"), 8),
			want:     wire.Header{APIKey: 3, APIVersion: 12, CorrelationID: 8, ClientID: "client-b", Flexible: true},
			wantBody: metaV12.AppendTo(nil),
		},
		{
			name:     "flexible ApiVersions",
			frame:    encodeRequest(apiV3, ptr("c"), 1),
			want:     wire.Header{APIKey: 18, APIVersion: 3, CorrelationID: 1, ClientID: "c", Flexible: true},
			wantBody: apiV3.AppendTo(nil),
		},
		{
			name:     "null client ID",
			frame:    encodeRequest(metaV4, nil, 1),
			want:     wire.Header{APIKey: 3, APIVersion: 4, CorrelationID: 1},
			wantBody: metaV4.AppendTo(nil),
		},
		{
			name:     "empty client ID",
			frame:    encodeRequest(metaV4, ptr(""), 1),
			want:     wire.Header{APIKey: 3, APIVersion: 4, CorrelationID: 1},
			wantBody: metaV4.AppendTo(nil),
		},
		{
			name:     "v2 header with a tagged field",
			frame:    append(append(bytes.Clone(flexHeader), 1, 5, 2, 'x', 'y'), metaV12.AppendTo(nil)...),
			want:     wire.Header{APIKey: 3, APIVersion: 12, CorrelationID: 9, ClientID: "id", Flexible: true},
			wantBody: metaV12.AppendTo(nil),
		},
		{name: "too short", frame: []byte{0, 3, 0, 4, 0, 0, 0, 1, 0}, wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "empty", frame: nil, wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "client ID longer than frame", frame: rawHeader(3, 4, 1, 10, "abc"), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "client ID length -2", frame: rawHeader(3, 4, 1, -2, ""), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "flexible header without tags", frame: flexHeader, wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "tag count without tags", frame: append(bytes.Clone(flexHeader), 2), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "tag longer than frame", frame: append(bytes.Clone(flexHeader), 1, 0, 9, 'x'), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "unterminated varint", frame: append(bytes.Clone(flexHeader), 0x80, 0x80), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{name: "overlong varint", frame: append(bytes.Clone(flexHeader), 0x81, 0x80, 0x80, 0x80, 0x80, 0x00), wantErr: wire.ErrShortHeader, wantNoHeader: true},
		{
			name:     "unknown key",
			frame:    append(rawHeader(32000, 0, 5, 1, "z"), 1, 2, 3),
			want:     wire.Header{APIKey: 32000, CorrelationID: 5, ClientID: "z"},
			wantBody: []byte{1, 2, 3},
			wantErr:  wire.ErrUnknownAPIKey,
		},
		{
			name:    "negative key",
			frame:   rawHeader(-1, 0, 5, -1, ""),
			want:    wire.Header{APIKey: -1, CorrelationID: 5},
			wantErr: wire.ErrUnknownAPIKey,
		},
		{
			name:     "unsupported version",
			frame:    append(rawHeader(3, 999, 6, 1, "z"), 4),
			want:     wire.Header{APIKey: 3, APIVersion: 999, CorrelationID: 6, ClientID: "z"},
			wantBody: []byte{4},
			wantErr:  wire.ErrUnsupportedVersion,
		},
		{
			name:    "negative version",
			frame:   rawHeader(3, -1, 6, 0, ""),
			want:    wire.Header{APIKey: 3, APIVersion: -1, CorrelationID: 6},
			wantErr: wire.ErrUnsupportedVersion,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := wire.ParseHeader(tc.frame)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v\nframe:\n%s", err, tc.wantErr, hex.Dump(tc.frame))
			}
			if tc.wantNoHeader {
				return
			}
			if h != tc.want {
				t.Fatalf("header = %+v, want %+v", h, tc.want)
			}
			if tc.wantBody != nil && !bytes.Equal(body, tc.wantBody) {
				t.Fatalf("body:\n%s\nwant:\n%s", hex.Dump(body), hex.Dump(tc.wantBody))
			}
		})
	}
}

// TestParseHeaderCutEverywhere feeds every prefix of a valid flexible
// request: each must either parse or fail with ErrShortHeader, never panic.
func TestParseHeaderCutEverywhere(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	frame := append(rawHeader(3, 12, 9, 2, "id"), 1, 5, 2, 'x', 'y')
	frame = append(frame, req.AppendTo(nil)...)
	headerLen := 10 + 2 + 5
	for cut := range len(frame) + 1 {
		_, _, err := wire.ParseHeader(frame[:cut])
		if cut < headerLen && !errors.Is(err, wire.ErrShortHeader) {
			t.Fatalf("cut at %d: err = %v, want ErrShortHeader", cut, err)
		}
		if cut >= headerLen && err != nil {
			t.Fatalf("cut at %d: err = %v", cut, err)
		}
	}
}

// TestParseHeaderEveryKeyAndVersion checks what ParseHeader knows of each
// key (looked up on first use) against kmsg: every version up to kmsg's
// newest parses, flexible exactly where kmsg's request is, and the version
// after it is unsupported.
func TestParseHeaderEveryKeyAndVersion(t *testing.T) {
	for key := range int16(1 << 8) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			if _, _, err := wire.ParseHeader(rawHeader(key, 0, 1, -1, "")); !errors.Is(err, wire.ErrUnknownAPIKey) {
				t.Fatalf("key %d: err = %v, want ErrUnknownAPIKey", key, err)
			}
			continue
		}
		for v := int16(0); v <= req.MaxVersion()+1; v++ {
			frame := append(rawHeader(key, v, 1, -1, ""), 0) // empty tagged fields
			h, _, err := wire.ParseHeader(frame)
			if v > req.MaxVersion() {
				if !errors.Is(err, wire.ErrUnsupportedVersion) {
					t.Fatalf("%s v%d: err = %v, want ErrUnsupportedVersion", kmsg.NameForKey(key), v, err)
				}
				continue
			}
			req.SetVersion(v)
			if err != nil || h.Flexible != req.IsFlexible() {
				t.Fatalf("%s v%d: flexible %v, err %v; kmsg says flexible %v", kmsg.NameForKey(key), v, h.Flexible, err, req.IsFlexible())
			}
		}
	}
}

// Parsing a header allocates nothing once its key has been seen (without a
// client ID, the one string it copies).
func TestParseHeaderAllocatesNothing(t *testing.T) {
	frame := append(rawHeader(18, 3, 1, -1, ""), 0)
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = wire.ParseHeader(frame) }); allocs != 0 {
		t.Fatalf("ParseHeader allocated %v times per call", allocs)
	}
}

func TestDecodeBody(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 9
	produce.Acks = -1
	produce.TimeoutMillis = 1500
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 3
	pp.Records = []byte("not really a batch")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	produceBody := produce.AppendTo(nil)

	tests := []struct {
		name    string
		h       wire.Header
		body    []byte
		wantErr error
	}{
		{name: "produce v9", h: wire.Header{APIKey: 0, APIVersion: 9}, body: produceBody},
		{name: "truncated", h: wire.Header{APIKey: 0, APIVersion: 9}, body: produceBody[:len(produceBody)-3], wantErr: wire.ErrMalformedBody},
		{name: "array longer than the body", h: wire.Header{APIKey: 3, APIVersion: 4}, body: []byte{0x7f, 0xff, 0xff, 0xff, 0}, wantErr: wire.ErrMalformedBody},
		{name: "empty body", h: wire.Header{APIKey: 0, APIVersion: 9}, wantErr: wire.ErrMalformedBody},
		{name: "unknown key", h: wire.Header{APIKey: 32000}, wantErr: wire.ErrUnknownAPIKey},
		{name: "unsupported version", h: wire.Header{APIKey: 0, APIVersion: 999}, wantErr: wire.ErrUnsupportedVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := wire.DecodeBody(tc.h, tc.body)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if req != nil {
					t.Fatalf("got a request with an error")
				}
				return
			}
			if req.Key() != tc.h.APIKey || req.GetVersion() != tc.h.APIVersion {
				t.Fatalf("decoded key %d v%d", req.Key(), req.GetVersion())
			}
			if got := req.AppendTo(nil); !bytes.Equal(got, tc.body) {
				t.Fatalf("re-encoded:\n%s\nwant:\n%s", hex.Dump(got), hex.Dump(tc.body))
			}
		})
	}

	// kmsg stops reading at the end of the last field and does not report
	// bytes left over, as Kafka's generated readers do not; a frame with
	// trailing bytes decodes as the request it starts with.
	t.Run("trailing bytes are ignored", func(t *testing.T) {
		req, err := wire.DecodeBody(wire.Header{APIKey: 0, APIVersion: 9}, append(bytes.Clone(produceBody), 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := req.AppendTo(nil); !bytes.Equal(got, produceBody) {
			t.Fatalf("decoded a different request")
		}
	})

	t.Run("strings do not alias the frame", func(t *testing.T) {
		body := bytes.Clone(produceBody)
		req, err := wire.DecodeBody(wire.Header{APIKey: 0, APIVersion: 9}, body)
		if err != nil {
			t.Fatal(err)
		}
		clear(body)
		if got := req.(*kmsg.ProduceRequest).Topics[0].Topic; got != "t" {
			t.Fatalf("topic changed with the frame: %q", got)
		}
	})
}

func TestAppendResponse(t *testing.T) {
	meta := func(v int16) kmsg.Response {
		r := kmsg.NewPtrMetadataResponse()
		r.Version = v
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 1, "localhost", 9092
		r.Brokers = append(r.Brokers, b)
		return r
	}
	apiVersions := func(v int16) kmsg.Response {
		r := kmsg.NewPtrApiVersionsResponse()
		r.Version = v
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = 3, 0, 12
		r.ApiKeys = append(r.ApiKeys, k)
		return r
	}
	tests := []struct {
		name    string
		resp    kmsg.Response
		tagByte bool
	}{
		{name: "metadata v4 (not flexible)", resp: meta(4)},
		{name: "metadata v12 (flexible)", resp: meta(12), tagByte: true},
		{name: "api versions v0", resp: apiVersions(0)},
		{name: "api versions v3 (flexible body, header v0)", resp: apiVersions(3)},
		{name: "api versions v4", resp: apiVersions(4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			out := wire.AppendResponse(bytes.Clone(prefix), 0x01020304, tc.resp)
			if !bytes.Equal(out[:4], prefix) {
				t.Fatalf("dst prefix overwritten")
			}
			frame := out[4:]
			if size := int(binary.BigEndian.Uint32(frame)); size != len(frame)-4 {
				t.Fatalf("size prefix %d, frame body %d bytes", size, len(frame)-4)
			}
			if cid := binary.BigEndian.Uint32(frame[4:]); cid != 0x01020304 {
				t.Fatalf("correlation ID %08x", cid)
			}
			body := frame[8:]
			if tc.tagByte {
				if body[0] != 0 {
					t.Fatalf("header tag section %d, want 0", body[0])
				}
				body = body[1:]
			}
			if want := tc.resp.AppendTo(nil); !bytes.Equal(body, want) {
				t.Fatalf("body:\n%s\nwant:\n%s", hex.Dump(body), hex.Dump(want))
			}
			// A client decoding with kmsg gets the same response back.
			back := tc.resp.RequestKind().ResponseKind()
			back.SetVersion(tc.resp.GetVersion())
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("kmsg cannot decode our response: %v", err)
			}
			if got, want := back.AppendTo(nil), tc.resp.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("round trip changed the response")
			}
		})
	}
}

// TestAppendResponseEveryVersion round-trips an empty response of every key
// and version kmsg knows.
func TestAppendResponseEveryVersion(t *testing.T) {
	for key := int16(0); key <= 127; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			resp := req.ResponseKind()
			resp.SetVersion(v)
			frame := wire.AppendResponse(nil, 1, resp)
			body := frame[8:]
			if resp.IsFlexible() && key != 18 {
				if body[0] != 0 {
					t.Fatalf("%s v%d: no empty header tag section", kmsg.NameForKey(key), v)
				}
				body = body[1:]
			}
			back := req.ResponseKind()
			back.SetVersion(v)
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: %v\n%s", kmsg.NameForKey(key), v, err, hex.Dump(frame))
			}
		}
	}
}
