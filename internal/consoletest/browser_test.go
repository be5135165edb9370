package consoletest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserWait bounds every wait for the page to show something: the broker
// answers at once on the manual clock, so only a broken console waits
// this long.
const browserWait = 15 * time.Second

// chromium finds Debian's chromium (or a Chrome) for the tests. A missing
// browser skips the test locally with the line that installs it, and
// fails it under CI=true, where .ci/run has installed it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const msg = "no chromium to drive the console with: apt-get install chromium (or set CHROMIUM to a Chrome binary)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// page is one browser tab on the console, with what its console and its
// runtime reported as errors.
type page struct {
	t   *testing.T
	ctx context.Context
	log *errorLog
}

// errorLog is what a tab reported as errors.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

// in is the same tab, failing t (a subtest) instead.
func (p *page) in(t *testing.T) *page { return &page{t: t, ctx: p.ctx, log: p.log} }

// openBrowser starts a headless chromium for the rest of the test and
// returns its first tab; page errors (exceptions, console.error, CSP and
// network errors the browser logs) are collected for noErrors.
func openBrowser(t *testing.T) *page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests may run as root (CI)
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	p := &page{t: t, ctx: ctx, log: &errorLog{}}
	// The first Run starts the browser, which lives as long as that Run's
	// context: so no timeout on it, but a watchdog that stops the browser
	// if it does not come up in time.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("chromium did not start within 30 s")
	}
	if err := chromedp.Listen(ctx, p.record); err != nil {
		t.Fatal(err)
	}
	return p
}

// record keeps what the page reports as an error (it runs in chromedp's
// event loop: quick, no calls back).
func (p *page) record(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		msg = "console.error: " + strings.Join(args, " ")
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	p.log.mu.Lock()
	p.log.errs = append(p.log.errs, msg)
	p.log.mu.Unlock()
}

// noErrors fails the test with every error the page reported.
func (p *page) noErrors() {
	p.t.Helper()
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	if len(p.log.errs) > 0 {
		p.t.Errorf("the page reported %d errors:\n%s", len(p.log.errs), strings.Join(p.log.errs, "\n"))
	}
}

// do runs actions under browserWait.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\npage: %s", what, err, p.text())
	}
}

// waitFor waits until the JS expression is truthy; an expression that
// throws (the element is not there yet) counts as false.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	p.waitForWithin(browserWait, what, expr)
}

// waitForWithin is waitFor with its own bound.
func (p *page) waitForWithin(bound time.Duration, what, expr string) {
	p.t.Helper()
	expr = "(() => { try { return (" + expr + "); } catch (e) { return false; } })()"
	ctx, cancel := context.WithTimeout(p.ctx, bound)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(bound)))
		if err == nil {
			return
		}
		// A poll started while the page was still loading loses its
		// execution context; poll again in the new one.
		if !strings.Contains(err.Error(), "Cannot find context") || ctx.Err() != nil {
			p.t.Fatalf("waiting for %s: %v\npage: %s", what, err, p.text())
		}
	}
}

// text is the page's visible text, for failure messages.
func (p *page) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// eval evaluates expr and decodes its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
