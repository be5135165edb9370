package features

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// release44 is kversion's 4.4 table without streams.version.
var release44 = Release{
	Name: "4.4",
	Supported: map[string]Range{
		MetadataVersion: {7, 33}, KRaftVersion: {0, 1}, TransactionVersion: {0, 2},
		GroupVersion: {0, 1}, ELRVersion: {0, 1}, ShareVersion: {0, 2},
	},
	Defaults: map[string]int16{
		MetadataVersion: 33, KRaftVersion: 1, TransactionVersion: 2,
		GroupVersion: 1, ELRVersion: 1, ShareVersion: 2,
	},
}

func newSet(t *testing.T, rel Release, overrides map[string]int16) *Set {
	t.Helper()
	levels, err := Initial(rel, overrides)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(rel, levels, 1, func() int32 { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const prefix = "The update failed for all features since the following feature had an error: "

// TestUpdateRefusals: features-update-rules, features-unknown,
// features-metadata-downgrade, features-kraft-version. Each refusal
// carries FeatureControlManager.updateFeature's message behind
// QuorumController's prefix, and changes nothing.
func TestUpdateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Update
		want string
	}{
		{"downgrade as an upgrade", Update{ShareVersion, 1, Upgrade},
			"Invalid update version 1 for feature share.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"upgrade as a downgrade", Update{MetadataVersion, 33, SafeDowngrade}, ""}, // same level: allowed
		{"out of range", Update{ShareVersion, 3, Upgrade},
			"Invalid update version 3 for feature share.version. Local controller 1 only supports versions 0-2"},
		{"negative", Update{ShareVersion, -1, SafeDowngrade},
			"Invalid update version -1 for feature share.version. A feature version cannot be less than 0."},
		{"unknown upgrade type", Update{ShareVersion, 1, 0},
			"Invalid update version 1 for feature share.version. The controller does not support the given upgrade type."},
		{"unknown feature", Update{"foo.version", 1, Upgrade},
			"Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."},
		{"unknown feature removed", Update{"foo.version", 0, SafeDowngrade},
			"Invalid update version 0 for feature foo.version. Feature foo.version not found."},
		{"streams.version not served", Update{StreamsVersion, 1, Upgrade},
			"Invalid update version 1 for feature streams.version. Local controller 1 does not support this feature."},
		{"metadata.version below the minimum", Update{MetadataVersion, 6, SafeDowngrade},
			"Invalid update version 6 for feature metadata.version. Local controller 1 only supports versions 7-33"},
		{"metadata.version across a format change", Update{MetadataVersion, 32, SafeDowngrade},
			"Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata.version unsafely", Update{MetadataVersion, 30, UnsafeDowngrade},
			"Unsupported metadata.version downgrade from 33 to 30. Unsafe metadata downgrade is not supported in this version."},
		{"kraft.version down", Update{KRaftVersion, 0, SafeDowngrade},
			"Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."},
		{"newer as a downgrade", Update{GroupVersion, 1, UnsafeDowngrade}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSet(t, release44, nil)
			before, epoch := s.Finalized()
			err := s.Update([]Update{tc.u}, false)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidUpdateVersion) || err.Error() != prefix+tc.want {
				t.Fatalf("got %v\nwant %s", err, prefix+tc.want)
			}
			after, epoch2 := s.Finalized()
			if !maps.Equal(before, after) || epoch != epoch2 {
				t.Fatalf("a refusal changed %v@%d to %v@%d", before, epoch, after, epoch2)
			}
		})
	}
}

// TestUpdateNewerAsDowngrade: features-update-rules. A level above the
// current one with a downgrade type is refused.
func TestUpdateNewerAsDowngrade(t *testing.T) {
	s := newSet(t, release44, map[string]int16{ShareVersion: 1})
	err := s.Update([]Update{{ShareVersion, 2, SafeDowngrade}}, false)
	want := prefix + "Invalid update version 2 for feature share.version. Can't downgrade to a newer version."
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestUpdateApplies: features-level-zero-removes, features-validate-only,
// features-update-atomic. An upgrade and a downgrade apply together and
// move the epoch; level 0 removes; validate-only changes nothing; one bad
// row keeps the good one from applying.
func TestUpdateApplies(t *testing.T) {
	s := newSet(t, Release{Name: "4.1", Supported: map[string]Range{MetadataVersion: {7, 27}, ShareVersion: {0, 1}, GroupVersion: {0, 1}},
		Defaults: map[string]int16{MetadataVersion: 27, GroupVersion: 1}}, nil)
	var journal []Levels
	s.SetJournal(func(l Levels, _ int64) error { journal = append(journal, l); return nil })
	if err := s.Update([]Update{{ShareVersion, 1, Upgrade}}, true); err != nil {
		t.Fatal(err)
	}
	if s.Level(ShareVersion) != 0 || len(journal) != 0 {
		t.Fatal("validate-only applied")
	}
	if err := s.Update([]Update{{ShareVersion, 1, Upgrade}, {GroupVersion, 0, SafeDowngrade}}, false); err != nil {
		t.Fatal(err)
	}
	lv, epoch := s.Finalized()
	if want := (Levels{MetadataVersion: 27, ShareVersion: 1}); !maps.Equal(lv, want) || epoch != 2 || len(journal) != 1 {
		t.Fatalf("levels %v epoch %d journal %d; want %v at 2, journaled once", lv, epoch, len(journal), want)
	}
	err := s.Update([]Update{{GroupVersion, 1, Upgrade}, {ShareVersion, 5, Upgrade}}, false)
	if err == nil || !strings.Contains(err.Error(), "share.version") || s.Level(GroupVersion) != 0 {
		t.Fatalf("a request with a bad row: %v, group.version %d", err, s.Level(GroupVersion))
	}
}

// TestUpdateOrder: features-update-atomic. Of two bad rows, the one a
// java.util.HashMap iterates first is reported, as Kafka checks them in
// that order: of 16 buckets, "group.version" (String.hashCode 904475753)
// falls in 0, "a" (97) in 1, "share.version" (-1228001847) in 7.
func TestUpdateOrder(t *testing.T) {
	got := javaHashMapOrder([]string{ShareVersion, GroupVersion, "a"})
	if want := []string{GroupVersion, "a", ShareVersion}; !equalStrings(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	s := newSet(t, release44, nil)
	err := s.Update([]Update{{ShareVersion, 9, Upgrade}, {GroupVersion, 9, Upgrade}}, false)
	if err == nil || !strings.Contains(err.Error(), "feature group.version") {
		t.Fatalf("got %v, want group.version's refusal first", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInitialLevels: kafka-version-features, features-kept-checked. The
// properties override a release's defaults within its range; a kept level
// the release does not support is refused.
func TestInitialLevels(t *testing.T) {
	if _, err := Initial(release44, map[string]int16{ShareVersion: 3}); err == nil {
		t.Error("share.version 3 under 4.4 accepted")
	}
	lv, err := Initial(release44, map[string]int16{ShareVersion: 0, TransactionVersion: 1})
	if err != nil || lv[ShareVersion] != 0 || lv[TransactionVersion] != 1 {
		t.Fatalf("%v %v", lv, err)
	}
	if _, ok := lv[ShareVersion]; ok {
		t.Error("a level of 0 is listed")
	}
	s := newSet(t, release44, nil)
	if err := s.Restore(Levels{MetadataVersion: 40}, 9); err == nil {
		t.Error("restored a metadata.version 4.4 does not support")
	}
}

// TestGates: features-api-gate. The share APIs close below share.version 1
// and the KIP-848 ones below group.version 1; others never close.
func TestGates(t *testing.T) {
	s := newSet(t, release44, map[string]int16{ShareVersion: 0})
	for key, closed := range map[int16]bool{76: true, 78: true, 92: true, 68: false, 1: false} {
		if _, got := s.Closed(key); got != closed {
			t.Errorf("API %d closed %v, want %v", key, got, closed)
		}
	}
	if err := s.Update([]Update{{GroupVersion, 0, SafeDowngrade}, {ShareVersion, 2, Upgrade}}, false); err != nil {
		t.Fatal(err)
	}
	if _, c := s.Closed(68); !c || !s.DeadLetters() {
		t.Error("levels changed at run time not followed")
	}
}

// TestMetadataSafeDowngrade: features-metadata-downgrade. Under 4.0,
// metadata.version 25 may go safely to 24 (4.0-IV3 and 4.0-IV2 changed no
// metadata format) but not to 22 (4.0-IV1 did).
func TestMetadataSafeDowngrade(t *testing.T) {
	rel := Release{Name: "4.0", Supported: map[string]Range{MetadataVersion: {7, 25}}, Defaults: map[string]int16{MetadataVersion: 25}}
	s := newSet(t, rel, nil)
	if err := s.Update([]Update{{MetadataVersion, 22, SafeDowngrade}}, false); err == nil {
		t.Fatal("25 to 22 accepted across 4.0-IV1")
	}
	if err := s.Update([]Update{{MetadataVersion, 24, SafeDowngrade}}, false); err != nil || s.Level(MetadataVersion) != 24 {
		t.Fatalf("25 to 24: %v, level %d", err, s.Level(MetadataVersion))
	}
}
