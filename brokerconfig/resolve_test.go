package brokerconfig

import (
	"errors"
	"strings"
	"testing"
)

func acceptClientAuth(v string) (string, error) { return v, nil }

// Resolve fills in every default; the broker's own tests check the rest of
// what a Config becomes through a running broker.
func TestResolveDefaults(t *testing.T) {
	r, err := Resolve(Settings{}, acceptClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	if r.Listen != DefaultListen || r.Nodes != 1 || r.ClusterID != DefaultClusterID {
		t.Errorf("defaults: %+v", r.Settings)
	}
	if len(r.Listeners) != 1 || r.Listeners[0] != (Listener{Name: "PLAINTEXT", Listen: DefaultListen}) {
		t.Errorf("listeners: %+v", r.Listeners)
	}
	if r.Values.Int32("num.partitions") != 1 || !r.Values.Bool("auto.create.topics.enable") || r.Values.Int64("log.retention.ms") != 604800000 {
		t.Errorf("property defaults: %v", r.Values)
	}
}

// ssl.client.auth is auth's: it is parsed by the function given, before
// the listener properties, and is not a property of the table.
func TestResolveClientAuth(t *testing.T) {
	var got string
	r, err := Resolve(Settings{Props: map[string]string{"ssl.client.auth": "required"}}, func(v string) (string, error) {
		got = v
		return "parsed", nil
	})
	if err != nil || got != "required" || r.ClientAuth != "parsed" {
		t.Fatalf("got %q, %+v, %v", got, r, err)
	}
	bad := errors.New("bad client auth")
	_, err = Resolve(Settings{Props: map[string]string{"ssl.client.auth": "x", "listeners": "nonsense"}}, func(string) (string, error) { return "", bad })
	if !errors.Is(err, bad) {
		t.Fatalf("a bad ssl.client.auth is the first mistake after the addresses: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    Settings
		want string
	}{
		{"listen without port", Settings{Listen: "localhost"}, `listen address "localhost": address localhost: missing port in address`},
		{"unknown property", Settings{Props: map[string]string{"no.such": "1"}}, `unknown broker property "no.such"`},
		{"bad value", Settings{Props: map[string]string{"num.partitions": "0"}}, "num.partitions"},
		{"two data dirs", Settings{Props: map[string]string{"log.dirs": "/a,/b"}}, "names 2 directories"},
		{"data dir twice", Settings{DataDir: "/a", Props: map[string]string{"log.dirs": "/b"}}, "data directory set twice"},
		{"data dir with nodes", Settings{DataDir: "/a", Nodes: 2, Listen: "127.0.0.1:0"}, "needs a single node"},
		{"node port above 65535", Settings{Listen: "127.0.0.1:65535", Nodes: 2}, "above 65535"},
		{"share rule", Settings{Props: map[string]string{"group.share.session.timeout.ms": "1000"}}, "group.share"},
	} {
		_, err := Resolve(tt.s, acceptClientAuth)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	r, err := Resolve(Settings{Props: map[string]string{"log.dirs": "/data"}}, acceptClientAuth)
	if err != nil || r.DataDir != "/data" || r.Values["log.dirs"] != "/data" {
		t.Fatalf("log.dirs as the data directory: %+v, %v", r, err)
	}
}

type overrides map[string]string

func (o overrides) Config(name string) (string, bool) { v, ok := o[name]; return v, ok }

// A topic's settings are its overrides, else its broker synonym's value,
// else (no synonym) the property's own default.
func TestTopicSettings(t *testing.T) {
	r, err := Resolve(Settings{Props: map[string]string{"log.retention.bytes": "100"}}, acceptClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	ts := r.Values.Topic(overrides{"retention.ms": "5", "message.timestamp.type": "LogAppendTime"})
	want := TopicSettings{RetentionMs: 5, RetentionBytes: 100, MaxMessageBytes: 1048588, LogAppendTime: true, MinInsync: 1}
	if ts != want {
		t.Errorf("Topic = %+v, want %+v", ts, want)
	}
	if v, over := r.Values.TopicValue(overrides{}, "errors.deadletterqueue.group.enable"); v != "false" || over {
		t.Errorf("no synonym: %q, %v", v, over)
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.ms": "1", "log.retention.ms": "1"}); err == nil || err.Error() != "unknown topic config name: log.retention.ms" {
		t.Errorf("ValidateTopicConfigs: %v", err)
	}
}
