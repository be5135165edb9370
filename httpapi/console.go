package httpapi

// The console: a browser page at / of the HTTP listener (docs/console.md)
// that shows what the JSON endpoints show and, with --enable-test-api,
// moves the broker through the test API. Its files are embedded in the
// binary; there is no build step and nothing is fetched from another
// origin.

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// consoleFiles are the page, its one script and its one stylesheet.
//
//go:embed console/index.html console/console.js console/console.css
var consoleFiles embed.FS

// consoleCSP is the console's Content-Security-Policy (**console-csp**):
// everything from this origin only, no inline script or style, data:
// images only (none are used but the browser's own), no framing, and
// forms posting nowhere but here.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ConsoleHeader is the header the console sends with every request that
// changes something; browsers' requests to the test API must carry it
// (console-cross-site).
const ConsoleHeader = "X-Sharebroker-Console"

// consoleRoutes adds the console's page and the JSON endpoints only it
// needed so far. The test API's routes are added by routes, behind
// crossSiteGuard.
func consoleRoutes(mux *http.ServeMux, cfg Config) {
	s := cfg.State
	mux.HandleFunc("GET /{$}", serveConsoleFile("index.html"))
	mux.HandleFunc("GET /console/{file...}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if name == "" {
			name = "index.html"
		}
		serveConsoleFile(path.Clean(name))(w, r)
	})
	mux.HandleFunc("GET /v1/groups/{group}", serveGroup(s))
	mux.HandleFunc("GET /v1/topics/{topic}", serveTopic(s))
	mux.HandleFunc("GET /v1/topics/{topic}/partitions/{p}/records", serveRecords(s))
	mux.HandleFunc("GET /v1/events", serveEvents(mux, s, &streams{}))
}

// serveConsoleFile answers one embedded file with the console's headers.
func serveConsoleFile(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(consoleFiles, "console/"+name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch path.Ext(name) {
		case ".html":
			h.Set("Content-Type", "text/html; charset=utf-8")
		case ".js":
			h.Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			h.Set("Content-Type", "text/css; charset=utf-8")
		}
		w.Write(b)
	}
}

// crossSiteGuard protects the test API from requests another site's page
// makes a browser send (**console-cross-site**). Two checks, both needed
// only for unsafe methods (GET, HEAD and OPTIONS change nothing):
//
//   - net/http.CrossOriginProtection refuses a request whose
//     Sec-Fetch-Site or Origin says it comes from another origin;
//   - a request that comes from a browser at all (it carries Origin or
//     Sec-Fetch-Site) must also carry ConsoleHeader, which a page of
//     another origin cannot add without a CORS preflight this listener
//     never grants.
//
// Scripts (curl, Go's http.Client) send neither header and keep working
// unchanged. Refusals are 403 with a JSON error.
func crossSiteGuard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused (console-cross-site)")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
		browser := r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != ""
		if !safe && browser && r.Header.Get(ConsoleHeader) != "1" {
			writeError(w, http.StatusForbidden, "a browser request to the test API must carry %s: 1 (console-cross-site)", ConsoleHeader)
			return
		}
		next.ServeHTTP(w, r)
	}))
}
