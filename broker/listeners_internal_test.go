package broker

import (
	"reflect"
	"testing"
)

func TestParseListeners(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		listeners, advertised, pmap string
		want                        []ListenerConfig
	}{
		{"simple form", "", "", "", []ListenerConfig{{Name: "PLAINTEXT", Listen: "127.0.0.1:9092"}}},
		{"advertised only", "", "PLAINTEXT://broker:9092", "",
			[]ListenerConfig{{Name: "PLAINTEXT", Listen: "127.0.0.1:9092", Advertise: "broker:9092"}}},
		{"two named", "host://0.0.0.0:9092, DOCKER://:29092", "HOST://localhost:9092,DOCKER://broker:29092",
			"HOST:PLAINTEXT,DOCKER:PLAINTEXT",
			[]ListenerConfig{{Name: "HOST", Listen: "0.0.0.0:9092", Advertise: "localhost:9092"},
				{Name: "DOCKER", Listen: ":29092", Advertise: "broker:29092"}}},
		// Rule: protocol-by-name.
		{"sasl by name", "SASL_SSL://:9093,SASL_PLAINTEXT://:9094", "", "",
			[]ListenerConfig{{Name: "SASL_SSL", Listen: ":9093", Protocol: "SASL_SSL"}, {Name: "SASL_PLAINTEXT", Listen: ":9094", Protocol: "SASL_PLAINTEXT"}}},
		{"sasl by map", "HOST://:9092,SECURE://:9093", "", "HOST:sasl_plaintext,SECURE:SASL_SSL",
			[]ListenerConfig{{Name: "HOST", Listen: ":9092", Protocol: "SASL_PLAINTEXT"}, {Name: "SECURE", Listen: ":9093", Protocol: "SASL_SSL"}}},
		{"one not advertised", "PLAINTEXT://127.0.0.1:0,EXT://127.0.0.1:0", "EXT://ext:1", "PLAINTEXT:PLAINTEXT,EXT:PLAINTEXT",
			[]ListenerConfig{{Name: "PLAINTEXT", Listen: "127.0.0.1:0"}, {Name: "EXT", Listen: "127.0.0.1:0", Advertise: "ext:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseListeners(tc.listeners, tc.advertised, tc.pmap, "127.0.0.1:9092")
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, listeners, advertised, pmap string }{
		{"no scheme", "0.0.0.0:9092", "", ""},
		{"unmapped name", "HOST://:9092", "", ""},
		{"name missing from map", "HOST://:9092,DOCKER://:9093", "", "HOST:PLAINTEXT"},
		{"unknown protocol", "HOST://:9092", "", "HOST:GSSAPI"},
		{"duplicate name", "PLAINTEXT://:9092,plaintext://:9093", "", ""},
		{"duplicate port", "A://:9092,B://127.0.0.1:9092", "", "A:PLAINTEXT,B:PLAINTEXT"},
		{"advertised unknown", "PLAINTEXT://:9092", "OTHER://x:9092", ""},
		{"advertised port 0", "PLAINTEXT://:9092", "PLAINTEXT://x:0", ""},
		{"advertised no host", "PLAINTEXT://:9092", "PLAINTEXT://:9092", ""},
		{"bad port", "PLAINTEXT://:99999", "", ""},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			if got, err := ParseListeners(tc.listeners, tc.advertised, tc.pmap, "127.0.0.1:9092"); err == nil {
				t.Fatalf("accepted: %+v", got)
			}
		})
	}
}

// The listener properties and Config.Listeners are two ways to say one
// thing; saying both is a mistake.
func TestResolveListeners(t *testing.T) {
	r, err := Config{Listen: "127.0.0.1:0", Advertise: "a:1"}.resolve()
	if err != nil || len(r.Listeners) != 1 || r.Listeners[0] != (ListenerConfig{Name: "PLAINTEXT", Listen: "127.0.0.1:0", Advertise: "a:1"}) {
		t.Fatalf("simple form: %+v, %v", r, err)
	}
	_, err = Config{Listeners: []ListenerConfig{{Name: "A", Listen: "127.0.0.1:0"}}, Props: map[string]string{"listeners": "PLAINTEXT://:0"}}.resolve()
	if err == nil {
		t.Fatal("Config.Listeners with the listeners property: accepted")
	}
	if _, err := (Config{Props: map[string]string{"advertised.listeners": "PLAINTEXT://x"}}).resolve(); err == nil {
		t.Fatal("advertised listener without a port: accepted")
	}
}
