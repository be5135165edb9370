package clients

// This file records the request frames librdkafka (through kcat) and
// kafka-python send, for the fuzz seeds and the decode tests, next to the
// Go clients' frames that wire/capture_test.go records. It runs only when
// asked:
//
//	go test ./clients -run TestCaptureClientFrames -capture
//
// The broker advertises a recording proxy (internal/clientframes), so
// every connection the clients open passes through it; the first frame of
// each API and version is written to
// ../testdata/frames/<client>/<api>-v<N>.hex.

import (
	"flag"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/clientframes"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

var capture = flag.Bool("capture", false, "record client request frames into ../testdata/frames")

const framesDir = "../testdata/frames"

func TestCaptureClientFrames(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to record client frames")
	}
	kcat := lookKcat(t)
	python := lookKafkaPython(t)

	p := testbroker.StartBehindProxy(t, broker.Config{})
	addr := p.Addr()

	for _, c := range []struct {
		name string
		run  func(t *testing.T, topic string)
	}{
		{"librdkafka", func(t *testing.T, topic string) {
			steps := [][]string{
				{"-L"},
				{"-P", "-t", topic, "-K:"},
				{"-C", "-t", topic, "-o", "beginning", "-e"},
				// A heartbeat is due well within the group consumer's run.
				{"-G", "frames-librdkafka-group", topic, "-e", "-X", "auto.offset.reset=earliest", "-X", "heartbeat.interval.ms=100"},
			}
			for _, args := range steps {
				if _, err := run(t, cmdSpec{name: kcat, args: kcatArgs(addr, args...), stdin: "k1:v1\nk2:v2\nk3:v3\n", timeout: 20 * time.Second}); err != nil {
					t.Fatalf("kcat %v: %v", args, err)
				}
			}
		}},
		{"kafka-python", func(t *testing.T, topic string) {
			if _, err := run(t, cmdSpec{name: python, args: []string{"python/produce_consume.py", addr, topic, "frames-kafka-python-group", "frames", "3"},
				timeout: 30 * time.Second}); err != nil {
				t.Fatalf("kafka-python: %v", err)
			}
		}},
	} {
		rec := clientframes.NewRecorder()
		p.SetRecorder(rec)
		c.run(t, "frames-"+c.name)
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
