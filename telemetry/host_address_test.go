package telemetry

import "testing"

// TestJavaHostAddress: the source address in the form Java's
// InetAddress.getHostAddress gives, which client_source_address selectors
// are matched against (telemetry-match).
func TestJavaHostAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":            "127.0.0.1",
		"::1":                  "0:0:0:0:0:0:0:1",
		"::":                   "0:0:0:0:0:0:0:0",
		"fe80::1%eth0":         "fe80:0:0:0:0:0:0:1%eth0",
		"2001:db8::ff00:42":    "2001:db8:0:0:0:0:ff00:42",
		"2001:db8:0:0:1:0:0:1": "2001:db8:0:0:1:0:0:1",
		"not an address":       "not an address",
	} {
		if got := javaHostAddress(in); got != want {
			t.Errorf("javaHostAddress(%q) = %q, want %q", in, got, want)
		}
	}
}
