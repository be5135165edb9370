package httpapi

// The guard of the HTTP listener (http-guard in docs/security.md, "Who
// may reach the HTTP listener"): with a token configured, every request
// must carry it as a bearer token (RFC 6750), except the probes, the
// browser console's static pages and, when public, the metrics. Without
// a token everything is open, as before; the CLI refuses an exposed test
// API without one.

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"
)

// guard wraps next so that requests need the bearer token; an empty token
// leaves next as it is.
func guard(next http.Handler, token string, metricsPublic bool) http.Handler {
	if token == "" {
		return next
	}
	// Comparing digests keeps the comparison's time independent of the
	// token's length as well as its bytes.
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open(r, metricsPublic) {
			next.ServeHTTP(w, r)
			return
		}
		given, ok := bearer(r.Header.Get("Authorization"))
		if ok {
			got := sha256.Sum256([]byte(given))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
				next.ServeHTTP(w, r)
				return
			}
		}
		challenge := `Bearer realm="sharebroker"`
		if ok {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeError(w, http.StatusUnauthorized, "this path needs the HTTP token: send the header \"Authorization: Bearer <token>\" (--http-token)")
	})
}

// open reports whether r may go through without the token: the health
// and readiness probes (orchestrators call them without credentials), the
// metrics when made public, and GETs of the browser console's static
// pages — / and /console/... — which hold no data (the console sends the
// token on its data requests). A path that is not clean is never open:
// the mux would redirect it elsewhere.
func open(r *http.Request, metricsPublic bool) bool {
	p := r.URL.Path
	switch p {
	case "/healthz", "/readyz":
		return true
	case "/metrics":
		return metricsPublic
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if p != "/" && !strings.HasPrefix(p, "/console/") {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// bearer is the token of an Authorization header of the Bearer scheme
// (the scheme's name in any case), and whether there was one.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
