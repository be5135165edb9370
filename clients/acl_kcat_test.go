package clients

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// kcat (librdkafka) lists only the topics its principal may describe
// (docs/security.md metadata-hides). Every PLAINTEXT connection is
// User:ANONYMOUS; with allow.everyone.if.no.acl.found the admin steps need
// no ACL, and a DENY of DESCRIBE hides one topic.
func TestKcatMetadataHidesTopics(t *testing.T) {
	kcat := lookKcat(t)
	b := startBroker(t,
		sharebrokertest.WithProperty("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		sharebrokertest.WithProperty("allow.everyone.if.no.acl.found", "true"))
	adm := admin(t, b.Addr)
	createTopic(t, adm, "acl-open", 1)
	createTopic(t, adm, "acl-hidden", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:ANONYMOUS").DenyHosts().
		Topics("acl-hidden").Operations(kadm.OpDescribe))
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}

	out, err := run(t, cmdSpec{name: kcat, args: kcatArgs(b.Addr, "-L", "-J"), timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("kcat -L: %v", err)
	}
	var md struct {
		Topics []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J output: %v", err)
	}
	var names []string
	for _, tp := range md.Topics {
		names = append(names, tp.Topic)
	}
	if !slices.Contains(names, "acl-open") || slices.Contains(names, "acl-hidden") {
		t.Fatalf("kcat lists %q, want acl-open and not acl-hidden", names)
	}
}
