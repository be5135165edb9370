package wire_test

// This file records the request frames that real Kafka clients send, for
// the fuzz seeds and the decode tests. It runs only when asked:
//
//	go test ./wire -run TestCaptureClientFrames -capture
//
// It starts an in-process broker behind a recording TCP proxy (the broker
// advertises the proxy, so every connection of every client passes through
// it), drives kgo, sarama and kafka-go through produce, list offsets and
// fetch, and writes the first frame seen for each client, API and version
// to ../testdata/frames/<client>/<api>-v<N>.hex. clients/capture_test.go does
// the same for librdkafka (kcat) and kafka-python, through the same proxy
// (internal/clientframes).

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	segkafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/clientframes"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/wire"
)

var capture = flag.Bool("capture", false, "record client request frames into ../testdata/frames")

// framesDir is where captured frames live, shared with other packages.
const framesDir = "../testdata/frames"

func TestCaptureClientFrames(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to record client frames")
	}
	p := testbroker.StartBehindProxy(t, broker.Config{})
	addr := p.Addr()

	for _, c := range []struct {
		name string
		run  func(ctx context.Context, t *testing.T, addr, topic string)
	}{
		{"kgo", runKgo},
		{"sarama", runSarama},
		{"kafka-go", runKafkaGo},
	} {
		rec := clientframes.NewRecorder()
		p.SetRecorder(rec)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.run(ctx, t, addr, "frames-"+c.name)
		cancel()
		p.SetRecorder(nil)
		written, missing, err := rec.Write(framesDir, c.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range written {
			t.Logf("%s: %s", c.name, path)
		}
		if len(missing) > 0 {
			t.Errorf("%s sent no %v request", c.name, missing)
		}
	}
}

func runKgo(ctx context.Context, t *testing.T, addr, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "kgo %d", i)}).FirstErr(); err != nil {
			t.Fatalf("kgo produce: %v", err)
		}
	}
	if _, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic); err != nil {
		t.Fatalf("kgo list offsets: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil || fs.NumRecords() == 0 {
		t.Fatalf("kgo fetch: %d records, %v", fs.NumRecords(), err)
	}
}

func runSarama(ctx context.Context, t *testing.T, addr, topic string) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.Compression = sarama.CompressionGZIP
	cfg.Metadata.AllowAutoTopicCreation = true
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	prod, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer prod.Close()
	for i := range 3 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("sarama %d", i))}); err != nil {
			t.Fatalf("sarama produce: %v", err)
		}
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("sarama consume: %v", err)
	}
	defer pc.Close()
	select {
	case <-pc.Messages():
	case err := <-pc.Errors():
		t.Fatalf("sarama fetch: %v", err)
	case <-ctx.Done():
		t.Fatal("sarama fetch: no message")
	}
}

func runKafkaGo(ctx context.Context, t *testing.T, addr, topic string) {
	w := &segkafka.Writer{Addr: segkafka.TCP(addr), Topic: topic, AllowAutoTopicCreation: true,
		Compression: segkafka.Lz4, BatchTimeout: time.Millisecond}
	defer w.Close()
	var err error
	for range 20 { // the first write can race the topic's creation
		if err = w.WriteMessages(ctx, segkafka.Message{Value: []byte("kafka-go 0")}, segkafka.Message{Value: []byte("kafka-go 1")}); err == nil {
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("kafka-go produce: %v", err)
	}
	r := segkafka.NewReader(segkafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(segkafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadMessage(ctx); err != nil {
		t.Fatalf("kafka-go fetch: %v", err)
	}
	// The reader resolves FirstOffset with a ListOffsets request; ask for
	// the end offset as well, which kafka-go's Client does with its own.
	cl := &segkafka.Client{Addr: segkafka.TCP(addr)}
	if _, err := cl.ListOffsets(ctx, &segkafka.ListOffsetsRequest{Topics: map[string][]segkafka.OffsetRequest{topic: {segkafka.LastOffsetOf(0)}}}); err != nil {
		t.Fatalf("kafka-go list offsets: %v", err)
	}
}

// loadFrames returns every captured frame (size prefix included) under
// ../testdata/frames, keyed by "<client>/<file>".
func loadFrames(t testing.TB) map[string][]byte {
	t.Helper()
	frames, err := clientframes.Load(framesDir)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestCapturedFramesDecode checks that every captured frame is one whole
// frame that parses and decodes, and that every client has the five APIs.
func TestCapturedFramesDecode(t *testing.T) {
	frames := loadFrames(t)
	perClient := make(map[string]map[int16]bool)
	for path, frame := range frames {
		body, err := wire.ReadFrame(strings.NewReader(string(frame)), wire.DefaultMaxFrameBytes)
		if err != nil || len(body) != len(frame)-4 {
			t.Fatalf("%s: not one whole frame: %v", path, err)
		}
		h, rest, err := wire.ParseHeader(body)
		if err != nil {
			t.Fatalf("%s: header: %v", path, err)
		}
		if want := clientframes.FileName(h.APIKey, h.APIVersion); filepath.Base(path) != want {
			t.Fatalf("%s holds %s v%d", path, kmsg.NameForKey(h.APIKey), h.APIVersion)
		}
		if _, err := wire.DecodeBody(h, rest); err != nil {
			t.Fatalf("%s: body: %v", path, err)
		}
		client := filepath.Base(filepath.Dir(path))
		if perClient[client] == nil {
			perClient[client] = make(map[int16]bool)
		}
		perClient[client][h.APIKey] = true
	}
	for _, client := range []string{"kgo", "sarama", "kafka-go", "librdkafka", "kafka-python"} {
		for _, key := range clientframes.CoreAPIs {
			if !perClient[client][key] {
				t.Errorf("no %s frame captured from %s", clientframes.APIs[key], client)
			}
		}
	}
}
