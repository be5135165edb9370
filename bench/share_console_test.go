package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// BenchmarkShareServerConsole measures console-live-bound's promise that
// an open console raises the broker's CPU per record on a busy share
// group by at most 10% (issue 20). It is BenchmarkShareServer's
// sharebroker workload twice in one run, the broker a child process
// serving its HTTP listener on a free loopback port in both:
//
//   - sharebroker-console-closed: no console.
//   - sharebroker-console-open: from the child's start to its stop, one
//     console is open on the share group's view (#/share-groups/G): the
//     one stream that view opens, GET /v1/events?watch=/v1/share-groups/G
//     (httpapi/console/console.js, route "share"; the broker clock comes
//     on the same stream), read continuously by a Go HTTP client. No
//     browser is needed for the broker's figure: the broker's work is the
//     same whoever reads the stream, and a browser's own CPU would land in
//     neither process measured here. The reader's parsing does land in
//     client-cpu-ns/record.
//
// Compare server-cpu-ns/record (the child's threads, from schedstat) of
// the two; bench/ratio.sh prints open/closed. console-views/op and
// console-clocks/op count the stream's events per op, so a stream that
// sent nothing cannot pass for a cheap one; console-view-KB is the mean
// size of the group's view as sent, the JSON the broker builds per tick. On a shared machine alternate
// the two over several runs and take medians:
//
//	go test -c -o /tmp/cb.test ./bench
//	for i in 1 2 3 4 5; do /tmp/cb.test -test.run '^$' -test.bench ShareServerConsole -test.benchtime 3x; done
func BenchmarkShareServerConsole(b *testing.B) {
	start := func(tb testing.TB) *childBroker { return startSharebrokerProcessHTTP(tb, true) }
	for _, p := range []processPeer{
		{name: "sharebroker-console-closed", start: start},
		{name: "sharebroker-console-open", start: start, console: true},
	} {
		b.Run(p.name, func(b *testing.B) { benchShareServer(b, p) })
	}
}

// healthy reports whether the HTTP listener at addr answers /healthz.
func healthy(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// consoleStream is one open console's event stream, read in the
// background.
type consoleStream struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader returned
	// Written by the reader, read after done.
	views, views200, clocks int64
	viewBytes               int64 // of the 200 views' data lines
	err                     error
}

// openConsole opens the stream the console's share-group view opens and
// reads it until close.
func openConsole(httpAddr, group string) (*consoleStream, error) {
	watch := "/v1/share-groups/" + url.PathEscape(group)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://"+httpAddr+"/v1/events?watch="+url.QueryEscape(watch), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("console stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("console stream: %s", resp.Status)
	}
	s := &consoleStream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 64<<20) // a view is one data line
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case bytes.Equal(line, []byte("event: view")):
				s.views++
			case bytes.Equal(line, []byte("event: clock")):
				s.clocks++
			case bytes.HasPrefix(line, []byte("data: {\"path\":")):
				// viewEvent's fields in order: path, status, body.
				if bytes.Contains(line[:min(len(line), 200)], []byte(`"status":200`)) {
					s.views200++
					s.viewBytes += int64(len(line))
				}
			}
		}
		s.err = sc.Err()
		if s.err == nil {
			s.err = errors.New("the broker ended the stream")
		}
	}()
	return s, nil
}

// close ends the stream and returns what it carried; an error if it
// ended before close or never showed the group.
func (s *consoleStream) close() (consoleCounts, error) {
	c := func() consoleCounts {
		return consoleCounts{views: s.views, clocks: s.clocks, views200: s.views200, viewBytes: s.viewBytes}
	}
	select {
	case <-s.done:
		return c(), fmt.Errorf("console stream ended during the run: %w", s.err)
	default:
	}
	s.cancel()
	<-s.done
	if s.views200 == 0 {
		return c(), fmt.Errorf("console stream: no view of the share group answered 200 (%d views)", s.views)
	}
	return c(), nil
}

// consoleCounts are the events one console stream carried.
type consoleCounts struct{ views, clocks, views200, viewBytes int64 }

func (c *consoleCounts) add(o consoleCounts) {
	c.views += o.views
	c.clocks += o.clocks
	c.views200 += o.views200
	c.viewBytes += o.viewBytes
}

// report adds the console's metrics to b: events per op, and the mean
// size of the group's view (the JSON the broker builds per tick).
func (c consoleCounts) report(b *testing.B) {
	b.ReportMetric(float64(c.views)/float64(b.N), "console-views/op")
	b.ReportMetric(float64(c.clocks)/float64(b.N), "console-clocks/op")
	b.ReportMetric(float64(c.viewBytes)/float64(max(c.views200, 1))/1024, "console-view-KB")
}
