package clientframes

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sharebroker/sharebroker/wire"
)

// APIs are the API keys frames are kept for, with the names their files
// start with: <name>-v<version>.hex.
var APIs = map[int16]string{
	0:  "produce",
	1:  "fetch",
	2:  "list_offsets",
	3:  "metadata",
	8:  "offset_commit",
	9:  "offset_fetch",
	10: "find_coordinator",
	11: "join_group",
	12: "heartbeat",
	13: "leave_group",
	14: "sync_group",
	18: "api_versions",
}

// CoreAPIs are the APIs every client's capture has: what a producer and a
// plain consumer send. Group APIs are captured only from the clients that
// are driven through a consumer group.
var CoreAPIs = []int16{0, 1, 2, 3, 18}

// FileName is the file a frame of the API key and version is kept in.
func FileName(key, version int16) string {
	return fmt.Sprintf("%s-v%d.hex", APIs[key], version)
}

// Recorder keeps the first frame of each API key and version it sees.
type Recorder struct {
	mu     sync.Mutex
	frames map[[2]int16][]byte // key, version -> frame with its size prefix
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{frames: make(map[[2]int16][]byte)} }

// Record keeps frame (size prefix included) if it is the first of its API
// key and version.
func (r *Recorder) Record(frame []byte) {
	h, _, err := wire.ParseHeader(frame[4:])
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]int16{h.APIKey, h.APIVersion}
	if _, ok := r.frames[k]; !ok {
		r.frames[k] = append([]byte(nil), frame...)
	}
}

// Write stores the recorded frames of the APIs in APIs under
// root/client, as hex, 64 digits a line, and returns the files written
// (sorted) and the core APIs that were not seen. Files already there for
// other versions are left alone.
func (r *Recorder) Write(root, client string) (written []string, missing []string, err error) {
	dir := filepath.Join(root, client)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[int16]bool)
	for k, frame := range r.frames {
		if _, ok := APIs[k[0]]; !ok {
			continue
		}
		seen[k[0]] = true
		var sb strings.Builder
		for h := hex.EncodeToString(frame); h != ""; {
			n := min(len(h), 64)
			sb.WriteString(h[:n])
			sb.WriteByte('\n')
			h = h[n:]
		}
		path := filepath.Join(dir, FileName(k[0], k[1]))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			return written, nil, err
		}
		written = append(written, path)
	}
	slices.Sort(written)
	for _, key := range CoreAPIs {
		if !seen[key] {
			missing = append(missing, APIs[key])
		}
	}
	return written, missing, nil
}

// Proxy is a TCP proxy that hands every client-to-broker frame to the
// current recorder. A broker under capture advertises the proxy's address,
// so that every connection of every client passes through it, including
// those a client opens after reading metadata.
type Proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	rec    *Recorder
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// ListenProxy listens on a free loopback port; Serve starts forwarding.
func ListenProxy() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &Proxy{ln: ln, conns: make(map[net.Conn]struct{})}, nil
}

// Addr is the address for the broker to advertise.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRecorder sends the frames from now on to r; nil records nothing.
func (p *Proxy) SetRecorder(r *Recorder) {
	p.mu.Lock()
	p.rec = r
	p.mu.Unlock()
}

// Serve forwards accepted connections to target until Close.
func (p *Proxy) Serve(target string) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			p.wg.Add(2)
			go func() {
				defer p.wg.Done()
				io.Copy(c, up)
				c.Close()
			}()
			go func() {
				defer p.wg.Done()
				defer up.Close()
				p.forward(c, up)
			}()
		}
	}()
}

// track remembers a connection pair for Close; false if closing already.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// forward copies whole frames from the client to the broker, recording
// each one.
func (p *Proxy) forward(c, up net.Conn) {
	for {
		body, err := wire.ReadFrame(c, wire.DefaultMaxFrameBytes)
		if err != nil {
			return
		}
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
		p.mu.Lock()
		rec := p.rec
		p.mu.Unlock()
		if rec != nil {
			rec.Record(frame)
		}
		if _, err := up.Write(frame); err != nil {
			return
		}
	}
}

// Close stops accepting, closes every forwarded connection and waits for
// the forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
