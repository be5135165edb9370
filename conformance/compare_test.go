package conformance_test

import (
	"strings"
	"testing"
)

// The comparison itself: each way a pair of transcripts can disagree with
// the table.
func TestCompare(t *testing.T) {
	table := []known{
		{scenario: "s", key: "listed", kafka: "k", kfake: "f", rule: "r1"},
		{scenario: "s", key: "pinned", kafka: "k", rule: "r2"},
		{scenario: "s", key: "gap", kafka: "k", sharebroker: "g", kfake: "f", rule: "r3"},
		{scenario: "other", key: "listed", kafka: "x", rule: "r4"},
	}
	tr := func(kv ...string) *transcript {
		t := &transcript{}
		for i := 0; i+1 < len(kv); i += 2 {
			t.note(kv[i], kv[i+1])
		}
		return t
	}
	cases := []struct {
		name         string
		sb, kf       *transcript
		wantProblems []string // substrings, one per problem, in order
		wantNotes    int
	}{
		{"as listed", tr("listed", "k", "pinned", "k", "gap", "g", "same", "v"), tr("listed", "f", "pinned", "k", "gap", "f", "same", "v"), nil, 2},
		{"unlisted difference", tr("listed", "k", "pinned", "k", "gap", "g", "same", "v"), tr("listed", "f", "pinned", "k", "gap", "f", "same", "w"), []string{"same: unlisted difference"}, 2},
		{"key only one peer noted", tr("listed", "k", "pinned", "k", "gap", "g"), tr("listed", "f", "pinned", "k", "gap", "f", "extra", "v"), []string{`extra: unlisted difference: sharebroker "<absent>"`}, 2},
		{"kfake fixed", tr("listed", "k", "pinned", "k", "gap", "g"), tr("listed", "k", "pinned", "k", "gap", "f"), []string{"listed: listed difference no longer occurs"}, 1},
		{"sharebroker not Kafka", tr("listed", "f", "pinned", "x", "gap", "g"), tr("listed", "f", "pinned", "x", "gap", "f"), []string{`listed: sharebroker "f", want "k"`, `pinned: sharebroker "x"`, `pinned: kfake "x"`}, 2},
		{"row never noted", tr("listed", "k", "gap", "g"), tr("listed", "f", "gap", "f"), []string{"pinned: listed (r2) but neither peer noted it"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems, notes := compare(table, "s", tc.sb, tc.kf)
			if len(problems) != len(tc.wantProblems) || len(notes) != tc.wantNotes {
				t.Fatalf("problems %q, notes %q", problems, notes)
			}
			for i, want := range tc.wantProblems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d is %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}
