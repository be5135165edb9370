package brokerconfig

import (
	"net"
	"testing"
)

// splitHostPort and joinHostPort stand in for package net's; an address
// must be accepted, split and refused exactly as before the configuration
// left package broker, error text included.
func TestSplitHostPortAsNet(t *testing.T) {
	for _, addr := range []string{
		"", ":", "127.0.0.1:9092", ":9092", "localhost:0", "host", "host:", "a:b:c",
		"[::1]:9092", "[::1]", "[::1]9092", "[::1]:1:2", "[fe80::1%eth0]:1", "[::1:1",
		"a[b:1", "a]b:1", "[a]]:1", "[[a]:1", "0.0.0.0:65536", "x:port",
	} {
		checkSplitHostPort(t, addr)
	}
}

func FuzzSplitHostPortAsNet(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9092", "[::1]:1", "[a]]:1", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(checkSplitHostPort)
}

func checkSplitHostPort(t *testing.T, addr string) {
	host, port, err := splitHostPort(addr)
	wantHost, wantPort, wantErr := net.SplitHostPort(addr)
	if host != wantHost || port != wantPort || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Errorf("splitHostPort(%q) = %q, %q, %v; net: %q, %q, %v", addr, host, port, err, wantHost, wantPort, wantErr)
	}
	if err == nil {
		if got, want := joinHostPort(host, port), net.JoinHostPort(host, port); got != want {
			t.Errorf("joinHostPort(%q, %q) = %q; net: %q", host, port, got, want)
		}
	}
}
