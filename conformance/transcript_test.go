package conformance_test

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A transcript is what one client saw in one scenario: an ordered list of
// observations, each a key (what was looked at) and a printed value.
type transcript struct {
	keys []string
	vals map[string]string
}

func (tr *transcript) note(key string, value any) {
	if tr.vals == nil {
		tr.vals = make(map[string]string)
	}
	if _, ok := tr.vals[key]; ok {
		panic("conformance: key noted twice: " + key)
	}
	tr.keys = append(tr.keys, key)
	tr.vals[key] = fmt.Sprint(value)
}

// codeName prints a Kafka error code the way the transcripts show it.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("code %d", code)
}

// errName prints a client-side outcome: NONE, a Kafka error name, or the
// Go error text.
func errName(err error) string {
	if err == nil {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

const absent = "<absent>"

// value returns what was noted for key, or absent.
func (tr *transcript) value(key string) string {
	if v, ok := tr.vals[key]; ok {
		return v
	}
	return absent
}

// compare checks the two transcripts of one scenario against each other
// and against table. problems are failures: a difference that is not
// listed, a listed one that no longer occurs, an answer that is not the
// table's. notes describe the listed differences seen.
func compare(table []known, scenario string, sb, kf *transcript) (problems, notes []string) {
	rows := make(map[string]known)
	for _, k := range table {
		if k.scenario == scenario {
			rows[k.key] = k
		}
	}
	keys := append([]string(nil), sb.keys...)
	for _, k := range kf.keys {
		if _, ok := sb.vals[k]; !ok {
			keys = append(keys, k)
		}
	}
	seen := make(map[string]bool)
	for _, key := range keys {
		seen[key] = true
		sv, kv := sb.value(key), kf.value(key)
		row, listed := rows[key]
		if !listed {
			if sv != kv {
				problems = append(problems, fmt.Sprintf("%s: unlisted difference: sharebroker %q, kfake %q", key, sv, kv))
			}
			continue
		}
		if want := row.sharebrokerWant(); sv != want {
			problems = append(problems, fmt.Sprintf("%s: sharebroker %q, want %q (Kafka: %q; %s)", key, sv, want, row.kafka, row.rule))
		}
		switch want := row.kfakeWant(); {
		case kv == want && row.kfake != "":
			notes = append(notes, fmt.Sprintf("%s: known difference (%s): sharebroker %q, kfake %q", key, row.rule, sv, kv))
		case kv == want:
		case kv == row.kafka:
			problems = append(problems, fmt.Sprintf("%s: listed difference no longer occurs: kfake now answers Kafka's %q; drop the row's kfake column (%s)", key, kv, row.rule))
		default:
			problems = append(problems, fmt.Sprintf("%s: kfake %q, table says %q (%s)", key, kv, want, row.rule))
		}
	}
	for _, k := range table {
		if k.scenario == scenario && !seen[k.key] {
			problems = append(problems, fmt.Sprintf("%s: listed (%s) but neither peer noted it", k.key, k.rule))
		}
	}
	return problems, notes
}
