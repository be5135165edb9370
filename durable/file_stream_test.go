package durable

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/storage"
)

// Tests of fetch-from-files and fetch-pins-segments: a streamed read pins
// sections of the segment files and writes them when its answer goes out.

// streamSegments puts about three 40 KiB batches in a segment, so reads
// cross segments and spans are both shorter and longer than the 64 KiB
// a streamed read pins.
func streamSegments(map[string]string) Policy {
	return Policy{SegmentBytes: 128 << 10, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1}
}

// streamFixture is a file-backed partition of batches of growing size and
// its in-memory twin.
func streamFixture(t *testing.T) (*storage.Store, *storage.Partition, *storage.Partition) {
	t.Helper()
	_, store, _ := open(t, t.TempDir(), Options{Policy: streamSegments})
	tp, err := store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var raws [][]byte
	for i := range 24 {
		spec := batchtest.Plain(1 + i%3)
		spec.ValueBytes = 1 + i*2000
		raws = append(raws, spec.Build())
	}
	for _, raw := range raws {
		if _, err := tp.Partition(0).Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return store, tp.Partition(0), memoryTwin(t, raws)
}

// streamed returns what a streamed read's answer writes to w, or its
// Records joined when it pinned nothing.
func streamed(t *testing.T, res storage.ReadResult, w func(io.WriterTo) []byte) []byte {
	t.Helper()
	if res.Stream == nil {
		return res.Records.Join()
	}
	got := w(res.Stream)
	if len(got) != res.Len() {
		t.Fatalf("stream wrote %d bytes, Len says %d", len(got), res.Len())
	}
	return got
}

// toBuffer writes a source to memory: the bounded-pieces path (no sendfile).
func toBuffer(t *testing.T) func(io.WriterTo) []byte {
	return func(src io.WriterTo) []byte {
		var b bytes.Buffer
		if _, err := src.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
}

// toSocket writes a source to a loopback TCP connection and returns what
// the other end read: the sendfile path on Linux.
func toSocket(t *testing.T) func(io.WriterTo) []byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return func(src io.WriterTo) []byte {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		read := make(chan []byte, 1)
		go func() {
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, _ := io.ReadAll(client)
			read <- b
		}()
		server.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, werr := src.WriteTo(server)
		server.Close()
		if werr != nil {
			t.Fatal(werr)
		}
		return <-read
	}
}

// fetch-from-files: a streamed read writes byte for byte what a read of
// the same batches in memory returns, to a socket (sendfile) and to any
// other writer (pieces), wherever it starts and however much it may take.
func TestStreamedReadSameBytes(t *testing.T) {
	_, p, twin := streamFixture(t)
	for name, w := range map[string]func(io.WriterTo) []byte{"pieces": toBuffer(t), "socket": toSocket(t)} {
		var rb storage.ReadBuffer
		streams := 0
		for off := int64(0); off < twin.Offsets().HighWatermark; off += 5 {
			for _, maxBytes := range []int32{1, 50 << 10, 300 << 10, 1 << 30} {
				res, err := p.ReadStreamInto(off, maxBytes, true, false, &rb)
				if err != nil {
					t.Fatal(err)
				}
				if res.Stream != nil {
					streams++
				}
				want, _ := twin.Read(off, maxBytes, true)
				if got := streamed(t, res, w); !bytes.Equal(got, want.Records.Join()) {
					t.Fatalf("%s: streamed read at %d of %d bytes: %d bytes, want %d byte for byte", name, off, maxBytes, len(got), want.Records.Len())
				}
				rb.Reset()
			}
		}
		if streams == 0 {
			t.Fatalf("%s: no read was streamed", name)
		}
	}
}

// fetch-from-files: small spans are copied while the ReadBuffer's copy
// budget lasts, and pinned after it, so one answer over many partitions
// holds a bounded amount of copies.
func TestStreamedReadCopyBudget(t *testing.T) {
	_, p, _ := streamFixture(t)
	var rb storage.ReadBuffer
	copied, pinned := 0, 0
	for range 100 {
		res, err := p.ReadStreamInto(0, 30<<10, true, false, &rb) // one small batch
		if err != nil {
			t.Fatal(err)
		}
		if res.Stream != nil {
			pinned++
		} else {
			copied += res.Len()
		}
	}
	if copied > 1<<20 || pinned == 0 {
		t.Fatalf("copied %d bytes and pinned %d reads; want at most 1 MiB copied, the rest pinned", copied, pinned)
	}
	rb.Reset()
}

// openFiles counts the process's open file descriptors (Linux).
func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// fetch-pins-segments: an answer read before its segments are deleted —
// by DeleteRecords (retention takes the same path) or with the topic —
// still writes the bytes it was read with, whole; once its ReadBuffer is
// Reset the deleted segments' handles are closed.
func TestPinnedSectionsOutliveDeletion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	for _, how := range []string{"delete-records", "delete-topic"} {
		t.Run(how, func(t *testing.T) {
			store, p, twin := streamFixture(t)
			before := openFiles(t)
			var rb storage.ReadBuffer
			res, err := p.ReadStreamInto(0, 1<<30, true, false, &rb)
			if err != nil || res.Stream == nil {
				t.Fatalf("read: stream %v, err %v", res.Stream != nil, err)
			}
			end := twin.Offsets().HighWatermark
			switch how {
			case "delete-records":
				if _, err := p.DeleteRecordsBefore(end); err != nil {
					t.Fatal(err)
				}
			case "delete-topic":
				if _, err := store.DeleteTopic("t"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.ReadStreamInto(0, 1<<30, true, false, nil); err == nil {
				t.Fatal("a new read of the deleted records succeeded")
			}
			want, _ := twin.Read(0, 1<<30, true)
			for name, w := range map[string]func(io.WriterTo) []byte{"pieces": toBuffer(t), "socket": toSocket(t)} {
				if got := streamed(t, res, w); !bytes.Equal(got, want.Records.Join()) {
					t.Fatalf("%s: answer pinned before the deletion wrote %d bytes, want the %d read", name, len(got), want.Records.Len())
				}
			}
			rb.Reset()
			if after := openFiles(t); after >= before {
				t.Errorf("%d descriptors open after Reset, %d before the deletion: the deleted segments' handles were kept", after, before)
			}
		})
	}
}

// fetch-from-files: on Linux a section goes to a TCP connection with
// sendfile(2), from the offset asked, leaving the shared handle's own
// offset where it was.
func TestSendFileToTCP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sendfile with an offset is Linux only here")
	}
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(5, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	got := toSocket(t)(writerFunc(func(w io.Writer) (int64, error) {
		n, handled, err := sendFile(w, f, 1000, int64(len(data)-2000))
		if !handled {
			t.Error("sendFile did not handle a TCP connection")
		}
		return n, err
	}))
	if !bytes.Equal(got, data[1000:len(data)-1000]) {
		t.Fatalf("sendfile wrote %d bytes, want %d from offset 1000", len(got), len(data)-2000)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 5 {
		t.Fatalf("the file's offset moved to %d", pos)
	}
}

type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }
