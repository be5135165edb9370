package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every API the dispatch table serves is one kmsg knows, up to a version
// kmsg decodes, so ApiVersions never advertises something unserved.
// (register leaves this to the test to keep kmsg out of start-up.)
func TestDispatchTableWithinKmsg(t *testing.T) {
	served := 0
	for key, a := range apis {
		if a == nil {
			continue
		}
		served++
		if int(a.key) != key {
			t.Errorf("apis[%d] holds key %d", key, a.key)
		}
		req := kmsg.RequestForKey(a.key)
		if req == nil {
			t.Errorf("API key %d is unknown to kmsg", a.key)
			continue
		}
		if a.maxVersion > req.MaxVersion() {
			t.Errorf("%s v%d is beyond what kmsg decodes (v%d)", kmsg.NameForKey(a.key), a.maxVersion, req.MaxVersion())
		}
	}
	if served == 0 {
		t.Fatal("the dispatch table is empty")
	}
}
