package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Rule scram-authzid (issue 21): a SCRAM client first message naming an
// authorization ID equal to the user ("n,a=alice,n=alice,...", as
// franz-go's scram.Auth.Zid writes it per RFC 5802) authenticates, as
// Kafka's ScramSaslServer accepts it; another user's ID is refused with
// Kafka's message. franz-go's client checks the server's signature, so a
// connection that produces and consumes ran the whole exchange.
func TestSCRAMAuthzidEqualToUser(t *testing.T) {
	b, _ := startSASLBroker(t, nil, map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	for name, mech := range map[string]func(scram.Auth) kgo.Opt{
		"SCRAM-SHA-256": func(a scram.Auth) kgo.Opt { return kgo.SASL(a.AsSha256Mechanism()) },
		"SCRAM-SHA-512": func(a scram.Auth) kgo.Opt { return kgo.SASL(a.AsSha512Mechanism()) },
	} {
		t.Run(name, func(t *testing.T) {
			produceConsumeOpts(t, addr, mech(scram.Auth{User: "alice", Pass: "alice-secret", Zid: "alice"}))

			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), mech(scram.Auth{User: "alice", Pass: "alice-secret", Zid: "bob"}))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const want = "Client requested an authorization id that is different from username"
			if err := cl.Ping(ctx); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("alice asking to act as bob: %v, want a refusal saying %q", err, want)
			}
		})
	}
}
