package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// kafka-version-default (docs/features.md): --kafka-version, its variable
// SHAREBROKER_KAFKA_VERSION and the property sharebroker.kafka.version
// choose the release; the flag wins over the property, the variable fills
// an unset flag; a bad value stops the start naming the flag and the
// accepted values.
func TestKafkaVersionFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    string // the property's value; "" for unset
	}{
		{"flag", []string{"--kafka-version", "4.1"}, nil, "4.1"},
		{"variable", nil, []string{"SHAREBROKER_KAFKA_VERSION=4.2"}, "4.2"},
		{"flag over variable", []string{"--kafka-version", "4.0"}, []string{"SHAREBROKER_KAFKA_VERSION=4.2"}, "4.0"},
		{"flag over property", []string{"--kafka-version", "4.3", "--config", "sharebroker.kafka.version=4.0"}, nil, "4.3"},
		{"property", []string{"--config", "sharebroker.kafka.version=4.0"}, nil, "4.0"},
		{"none", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configFrom(t, tc.args, tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Props["sharebroker.kafka.version"]; got != tc.want {
				t.Fatalf("sharebroker.kafka.version %q, want %q", got, tc.want)
			}
		})
	}
	for _, args := range [][]string{{"--kafka-version", "3.9"}, {"--kafka-version", "4.4.1"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := runCommand(t, ctx, args...)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "--kafka-version") || !strings.Contains(err.Error(), "4.0, 4.1, 4.2, 4.3 or 4.4") {
			t.Fatalf("%v: %v, want an error naming --kafka-version and the releases", args, err)
		}
	}
}
