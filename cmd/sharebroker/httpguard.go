package main

// The flags that guard the HTTP listener (docs/security.md, "Who may
// reach the HTTP listener"): its bearer token, whether /metrics needs it,
// its connection cap, and the refusal of a test API open to the network.

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sharebroker/sharebroker/broker"
)

// httpGuardFlags are the serve flags of the HTTP listener's guard.
type httpGuardFlags struct {
	token          string
	tokenFile      string
	metricsPublic  bool
	maxConnections int
	// allowOpenTestAPI lets --enable-test-api serve on a non-loopback
	// address without a token.
	allowOpenTestAPI bool
}

const (
	flagHTTPToken        = "http-token"
	flagHTTPTokenFile    = "http-token-file"
	flagAllowOpenTestAPI = "allow-unauthenticated-test-api"
)

func addHTTPGuardFlags(fs *pflag.FlagSet, f *httpGuardFlags) {
	fs.StringVar(&f.token, flagHTTPToken, "", "bearer token every HTTP path but /healthz, /readyz and the console's pages requires (Authorization: Bearer TOKEN); empty: none")
	fs.StringVar(&f.tokenFile, flagHTTPTokenFile, "", "file holding the HTTP token (surrounding whitespace dropped), instead of --"+flagHTTPToken)
	fs.BoolVar(&f.metricsPublic, "http-metrics-public", false, "serve /metrics without the HTTP token")
	fs.IntVar(&f.maxConnections, "http-max-connections", 256, "connections the HTTP listener holds at once; more wait until one closes")
	fs.BoolVar(&f.allowOpenTestAPI, flagAllowOpenTestAPI, false, "allow --enable-test-api on a non-loopback --http address without --"+flagHTTPToken)
}

// applyHTTPGuard sets cfg's HTTP token, metrics and connection cap from f,
// and refuses a test API that anyone on the network could use: on an
// address that is not loopback, without a token, unless allowed.
func applyHTTPGuard(cfg *broker.Config, f httpGuardFlags) error {
	token := f.token
	if f.tokenFile != "" {
		if token != "" {
			return fmt.Errorf("--%s and --%s: give one", flagHTTPToken, flagHTTPTokenFile)
		}
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return fmt.Errorf("--%s: %v", flagHTTPTokenFile, err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("--%s %s: the file is empty", flagHTTPTokenFile, f.tokenFile)
		}
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return fmt.Errorf("--%s: the token may not hold whitespace", flagHTTPToken)
	}
	if f.maxConnections < 1 {
		return fmt.Errorf("--http-max-connections %d: want at least 1", f.maxConnections)
	}
	cfg.HTTPToken, cfg.HTTPMetricsPublic, cfg.HTTPMaxConnections = token, f.metricsPublic, f.maxConnections
	if cfg.EnableTestAPI && cfg.HTTP != "" && token == "" && !f.allowOpenTestAPI && !loopback(cfg.HTTP) {
		return fmt.Errorf("--enable-test-api on --http %s, which is not a loopback address, lets anyone who reaches it move the clock, stop nodes and inject faults: "+
			"set --%s (or --%s), bind --http to 127.0.0.1, or pass --%s", cfg.HTTP, flagHTTPToken, flagHTTPTokenFile, flagAllowOpenTestAPI)
	}
	return nil
}

// loopback reports whether the HOST:PORT addr binds loopback only: a
// loopback IP or the name localhost. An empty host, 0.0.0.0 and [::] bind
// every interface; any other name is taken as reachable.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
