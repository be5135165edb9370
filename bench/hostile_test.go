package bench_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// BenchmarkHostileConnections measures what a hostile or broken client
// costs a broker process: it opens hostileConns connections, and on each
// sends a frame size prefix of 1 MiB up to 100 MiB (Kafka's
// socket.request.max.bytes) followed by a few bytes of the promised frame,
// then leaves the connection open. A broker that allocates a frame's
// buffer from its size prefix alone holds gigabytes here; one that grows
// the buffer with the bytes that arrive holds about what was sent.
//
// Metrics, per op:
//   - HWM-KB: the broker's VmHWM (peak RSS) once every connection has
//     sent its bytes and the broker has read them;
//   - RSS-KB: its VmRSS then.
//
// The client side stays in this process, so the broker's figures are its
// own. Both peers run as child processes (see BenchmarkShareServer).
func BenchmarkHostileConnections(b *testing.B) {
	for _, p := range processPeers {
		b.Run(p.name, func(b *testing.B) { benchHostile(b, p) })
	}
}

// hostileConns is how many connections one op opens: thousands, as a
// misbehaving fleet of clients would, within the 20,000 open files a
// process may have here (both ends are on this machine).
const hostileConns = 7000

func benchHostile(b *testing.B, p processPeer) {
	var hwm, rss int64
	for range b.N {
		child := p.start(b)
		conns := make([]net.Conn, 0, hostileConns)
		rng := rand.New(rand.NewPCG(1, 2))
		for range hostileConns {
			c, err := net.DialTimeout("tcp", child.addr, 5*time.Second)
			if err != nil {
				b.Fatalf("connection %d: %v", len(conns), err)
			}
			conns = append(conns, c)
			// A size prefix the broker accepts, then a request header's
			// worth of bytes: the rest of the frame never comes.
			msg := binary.BigEndian.AppendUint32(nil, uint32(1<<20+rng.IntN(99<<20)))
			for range 16 + rng.IntN(48) {
				msg = append(msg, byte(rng.Uint32()))
			}
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(msg); err != nil {
				b.Fatalf("connection %d: write: %v", len(conns), err)
			}
		}
		// The broker reads each connection's bytes on its own schedule;
		// sample its memory until it stops growing, within a deadline.
		deadline := time.Now().Add(10 * time.Second)
		var last int64 = -1
		for time.Now().Before(deadline) {
			cur := child.statusKB(b, "VmRSS")
			if cur == last {
				break
			}
			last = cur
			time.Sleep(200 * time.Millisecond) // sampling interval, bounded by deadline
		}
		hwm = max(hwm, child.statusKB(b, "VmHWM"))
		rss = max(rss, child.statusKB(b, "VmRSS"))
		for _, c := range conns {
			c.Close()
		}
		child.stop()
	}
	b.ReportMetric(float64(hwm), "HWM-KB")
	b.ReportMetric(float64(rss), "RSS-KB")
}
