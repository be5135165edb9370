package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testadmin"
)

// releases are kversion's table of each release --kafka-version accepts.
var releases = map[string]func() *kversion.Versions{
	"4.0": kversion.V4_0_0, "4.1": kversion.V4_1_0, "4.2": kversion.V4_2_0,
	"4.3": kversion.V4_3_0, "4.4": kversion.V4_4_0,
}

// shortOfRelease are the APIs whose handler stops below a release's
// maximum, by release, each with why; the rest must equal kversion. The
// test fails when one catches up, so the list only shrinks.
var shortOfRelease = map[string]map[int16]string{}

func init() {
	for _, r := range []string{"4.0", "4.1", "4.2", "4.3", "4.4"} {
		// v4+ batch transactions for brokers (KIP-890's verification);
		// clients stop at v3 (transactions.md).
		shortOfRelease[r] = map[int16]string{24: "AddPartitionsToTxn v4+ is broker-to-broker"}
	}
}

func startRelease(t *testing.T, version string, props map[string]string) string {
	t.Helper()
	all := map[string]string{broker.KafkaVersionProperty: version}
	maps.Copy(all, props)
	_, addr := startBroker(t, broker.Config{Props: all})
	return addr
}

func releaseAPIVersions(t *testing.T, addr string) *kmsg.ApiVersionsResponse {
	t.Helper()
	c := rawconn.Dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "release-test", "1"
	resp := c.Request(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
	return resp
}

// TestKafkaVersionAPIs: kafka-version-apis. Under each --kafka-version,
// ApiVersions advertises exactly kversion's maximum of that release for
// every API a handler serves (from the handler's own minimum or the
// release's, whichever is higher: TestReleaseMinVersions checks those
// against kversion), nothing the release lacks, and a version above the advertised one closes the
// connection, as a Kafka broker refuses a version it does not parse; an
// ApiVersions above it is answered at v0 with UNSUPPORTED_VERSION.
func TestKafkaVersionAPIs(t *testing.T) {
	handlers := broker.HandlerRanges()
	for _, name := range broker.KafkaVersions {
		t.Run(name, func(t *testing.T) {
			vs := releases[name]()
			addr := startRelease(t, name, nil)
			got := make(map[int16][2]int16)
			for _, k := range releaseAPIVersions(t, addr).ApiKeys {
				got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			}
			for _, key := range slices.Sorted(maps.Keys(handlers)) {
				h := handlers[key]
				rmax, inRelease := vs.LookupMaxKeyVersion(key)
				adv, advertised := got[key]
				switch {
				case !inRelease || rmax < h[0]:
					if advertised {
						t.Errorf("%s: advertised %v, which Kafka %s does not have", kmsg.NameForKey(key), adv, name)
					}
				case shortOfRelease[name][key] != "":
					if adv[1] >= rmax || adv[1] != h[1] {
						t.Errorf("%s: advertised %v under Kafka %s (v%d): update shortOfRelease", kmsg.NameForKey(key), adv, name, rmax)
					}
				case adv[1] != rmax || adv[0] < h[0]:
					t.Errorf("%s: advertised %v, want up to v%d (Kafka %s's maximum) from v%d or above", kmsg.NameForKey(key), adv, rmax, name, h[0])
				}
			}
			for key := range got {
				if _, ok := handlers[key]; !ok {
					t.Errorf("%s advertised without a handler", kmsg.NameForKey(key))
				}
			}
			// A version above the release's, which the handler would
			// take: refused.
			refused := 0
			for _, key := range slices.Sorted(maps.Keys(got)) {
				if got[key][1] >= handlers[key][1] {
					continue
				}
				refused++
				req := kmsg.RequestForKey(key)
				req.SetVersion(got[key][1] + 1)
				c := rawconn.Dial(t, addr)
				if key == 18 {
					c.Write(c.Frame(req))
					resp := kmsg.NewPtrApiVersionsResponse() // answered at v0
					c.ReadResponse(resp)
					if resp.ErrorCode != kerr.UnsupportedVersion.Code {
						t.Errorf("ApiVersions v%d: error %d, want UNSUPPORTED_VERSION", got[key][1]+1, resp.ErrorCode)
					}
					continue
				}
				c.Write(c.Frame(req))
				c.ExpectClosed()
			}
			// A version below the release's minimum, which the handler
			// would take (OffsetCommit v1 after KIP-896): refused too.
			below := 0
			for _, key := range slices.Sorted(maps.Keys(got)) {
				if got[key][0] <= handlers[key][0] {
					continue
				}
				below++
				req := kmsg.RequestForKey(key)
				req.SetVersion(got[key][0] - 1)
				c := rawconn.Dial(t, addr)
				c.Write(c.Frame(req))
				c.ExpectClosed()
			}
			if below == 0 {
				t.Errorf("Kafka %s: no API whose handler starts below the release; the refusal went untested", name)
			}
			if name != broker.KafkaVersions[len(broker.KafkaVersions)-1] && refused == 0 {
				t.Errorf("Kafka %s: no API whose handler goes past the release; the refusal went untested", name)
			}
		})
	}
}

// TestKafkaVersionFeatures: kafka-version-features, features-not-served.
// Under each --kafka-version, ApiVersions' supported features and their
// finalized levels are kversion's for that release (a new cluster's
// levels), but streams.version, whose groups are not served.
func TestKafkaVersionFeatures(t *testing.T) {
	for _, name := range broker.KafkaVersions {
		t.Run(name, func(t *testing.T) {
			vs := releases[name]()
			var wantSup, wantFin []string
			vs.EachSupportedFeature(func(f string, lo, hi int16) {
				if f != "streams.version" {
					wantSup = append(wantSup, fmt.Sprintf("%s %d-%d", f, lo, hi))
				}
			})
			vs.EachFinalizedFeature(func(f string, level int16) {
				if f != "streams.version" && level > 0 {
					wantFin = append(wantFin, fmt.Sprintf("%s %d", f, level))
				}
			})
			resp := releaseAPIVersions(t, startRelease(t, name, nil))
			var sup, fin []string
			for _, f := range resp.SupportedFeatures {
				sup = append(sup, fmt.Sprintf("%s %d-%d", f.Name, f.MinVersion, f.MaxVersion))
			}
			for _, f := range resp.FinalizedFeatures {
				if f.MinVersionLevel != f.MaxVersionLevel {
					t.Errorf("%s finalized %d-%d; want one level", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
				}
				fin = append(fin, fmt.Sprintf("%s %d", f.Name, f.MaxVersionLevel))
			}
			slices.Sort(sup)
			slices.Sort(fin)
			if !slices.Equal(sup, wantSup) {
				t.Errorf("supported features\n got %v\nwant %v", sup, wantSup)
			}
			if !slices.Equal(fin, wantFin) {
				t.Errorf("finalized features\n got %v\nwant %v", fin, wantFin)
			}
			if resp.FinalizedFeaturesEpoch < 1 {
				t.Errorf("finalized epoch %d", resp.FinalizedFeaturesEpoch)
			}
		})
	}
}

// TestKafkaVersion41ShareConsumer: features-api-gate. A kgo share consumer
// against --kafka-version 4.1, whose new clusters finalize share.version 0,
// gets what Kafka 4.1 answers: ShareGroupHeartbeat refused with
// UNSUPPORTED_VERSION (KafkaApis.handleShareGroupHeartbeat's
// isShareGroupProtocolEnabled check), which kgo reports from its poll.
// Under 4.2 the same consumer gets its records.
func TestKafkaVersion41ShareConsumer(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{{"4.1", true}, {"4.2", false}} {
		t.Run(tc.version, func(t *testing.T) {
			addr := startRelease(t, tc.version, nil)
			topic, group := "t41", "g41"
			ctx, cl, adm := newAdmin(t, addr)
			mustCreate(t, ctx, adm, topic, 1, nil)
			if !tc.refused {
				testadmin.SetGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			err := pollShare(t, addr, topic, group)
			switch {
			case tc.refused && !errors.Is(err, kerr.UnsupportedVersion):
				t.Fatalf("share consumer under Kafka %s: %v, want UNSUPPORTED_VERSION", tc.version, err)
			case !tc.refused && err != nil:
				t.Fatalf("share consumer under Kafka %s: %v", tc.version, err)
			}
		})
	}
}

// pollShare polls a kgo share consumer of group until it has a record (nil)
// or an error, within a deadline.
func pollShare(t *testing.T, addr, topic, group string) error {
	t.Helper()
	sc := newShareConsumer(t, addr, topic, group)
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := sc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		if fs.NumRecords() > 0 {
			return nil
		}
	}
	t.Fatalf("share consumer of %s: nothing within the deadline", group)
	return nil
}

// TestKafkaVersionFlagValue: kafka-version-default. A bad release is
// refused at start naming the property and what it accepts; none is the
// newest.
func TestKafkaVersionFlagValue(t *testing.T) {
	_, err := broker.New(broker.Config{Props: map[string]string{broker.KafkaVersionProperty: "3.9"}})
	if err == nil || !strings.Contains(err.Error(), broker.KafkaVersionProperty) || !strings.Contains(err.Error(), "4.4") {
		t.Fatalf("New with 3.9: %v", err)
	}
	got := releaseAPIVersions(t, startRelease(t, "4.4", nil))
	def := releaseAPIVersions(t, func() string { _, a := startBroker(t, broker.Config{}); return a }())
	if !slices.EqualFunc(got.ApiKeys, def.ApiKeys, func(a, b kmsg.ApiVersionsResponseApiKey) bool {
		return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
	}) {
		t.Error("the default release is not 4.4")
	}
}
