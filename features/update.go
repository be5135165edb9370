package features

// UpdateFeatures (API 57) as a Kafka 4.x controller answers it:
// QuorumController.updateFeatures collects the request's rows into a
// HashMap (a later row of the same name wins), and
// FeatureControlManager.updateFeatures checks them one by one in that
// map's order; the first refusal fails the whole request and nothing
// changes (features-update-atomic); validate-only checks and changes
// nothing (features-validate-only). Each check is updateFeature's, with its
// messages, in its order (docs/features.md).

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf16"
)

// UpgradeType is FeatureUpdate.UpgradeType's code on the wire.
type UpgradeType int8

// The upgrade types; any other code is Kafka's UNKNOWN.
const (
	Upgrade         UpgradeType = 1
	SafeDowngrade   UpgradeType = 2
	UnsafeDowngrade UpgradeType = 3
)

// Update is one row of an UpdateFeatures request.
type Update struct {
	Name  string
	Level int16
	Type  UpgradeType
}

// ErrInvalidUpdateVersion is Kafka's INVALID_UPDATE_VERSION: every refusal
// of a feature update is one.
var ErrInvalidUpdateVersion = errors.New("invalid update version")

// RefusedError is a refused UpdateFeatures: Message is the top-level
// message Kafka sends.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrInvalidUpdateVersion) hold.
func (e *RefusedError) Unwrap() error { return ErrInvalidUpdateVersion }

// refusedPrefix is what QuorumController puts in front of the refusal of
// the feature it stopped at.
const refusedPrefix = "The update failed for all features since the following feature had an error: "

// metadataChanged is MetadataVersion's didMetadataChange for each level
// from 7 (the minimum of 4.x) to 33, Kafka's table in MetadataVersion.java.
// A downgrade across a level that changed the metadata format is refused
// (features-metadata-downgrade).
var metadataChanged = map[int16]bool{
	7: true, 8: true, 9: false, 10: false, 11: true, 12: false, 13: true, 14: true,
	15: true, 16: false, 17: true, 18: false, 19: false, 20: false, 21: false,
	22: false, 23: true, 24: false, 25: false, 26: false, 27: false, 28: false,
	29: false, 30: true, 31: false, 32: true, 33: true,
}

// dependencies are the FeatureVersion.dependencies() of the levels a
// release here supports, checked by Feature.validateVersion against the
// levels the request would leave: ShareVersion.SV_1 needs metadata.version
// 27 (4.1-IV1). metadata.version never goes below a release's default
// here, which meets every dependency of that release's levels, so no other
// entry could change an answer.
var dependencies = map[string]map[int16]map[string]int16{
	ShareVersion: {1: {MetadataVersion: 27}},
}

// knownSince is the first release whose Feature enum names each feature
// (a release may know a feature whose only production level is 0, and not
// advertise it): ShareVersion and StreamsVersion came in 4.1.
var knownSince = map[string]string{
	MetadataVersion: "4.0", KRaftVersion: "4.0", TransactionVersion: "4.0", GroupVersion: "4.0",
	ELRVersion: "4.0", ShareVersion: "4.1", StreamsVersion: "4.1",
}

// knownIn reports whether release's Feature enum names feature.
func knownIn(release, feature string) bool {
	since, ok := knownSince[feature]
	return ok && slices.Index(Releases, release) >= slices.Index(Releases, since)
}

// Update applies updates as one UpdateFeatures request, or with
// validateOnly only checks them. A refusal is a *RefusedError carrying
// Kafka's top-level message; an error from the journal is returned as is
// and changes nothing.
func (s *Set) Update(updates []Update, validateOnly bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	byName := make(map[string]Update, len(updates))
	var order []string
	for _, u := range updates {
		if _, ok := byName[u.Name]; !ok {
			order = append(order, u.Name)
		}
		byName[u.Name] = u
	}
	order = javaHashMapOrder(order)
	proposed := maps.Clone(s.finalized)
	for name, u := range byName {
		proposed[name] = u.Level
	}
	for _, name := range order {
		if reason := s.check(byName[name], proposed); reason != "" {
			return &RefusedError{Message: refusedPrefix + reason}
		}
	}
	if validateOnly || len(order) == 0 {
		return nil
	}
	next := maps.Clone(s.finalized)
	for name, u := range byName {
		if u.Level == 0 {
			delete(next, name) // features-level-zero-removes
		} else {
			next[name] = u.Level
		}
	}
	// Each applied request writes records, so the epoch (Kafka's metadata
	// offset) moves even when no level changed.
	epoch := s.epoch + 1
	if s.journal != nil {
		if err := s.journal(maps.Clone(next), epoch); err != nil {
			return err
		}
	}
	s.finalized, s.epoch = next, epoch
	return nil
}

// check is FeatureControlManager.updateFeature for one row: "" when it may
// be applied, else the refusal's message.
func (s *Set) check(u Update, proposed Levels) string {
	invalid := func(msg string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", u.Level, u.Name, msg)
	}
	if u.Type != Upgrade && u.Type != SafeDowngrade && u.Type != UnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	current := s.finalized[u.Name]
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	// QuorumFeatures.reasonNotLocallySupported: a feature this release
	// does not have supports only level 0 (features-unknown).
	r := s.release.Supported[u.Name]
	if !r.Contains(u.Level) {
		what := fmt.Sprintf("Local controller %d", s.controller())
		if r.Max == 0 {
			return invalid(what + " does not support this feature.")
		}
		return invalid(fmt.Sprintf("%s only supports versions %s", what, r))
	}
	switch {
	case u.Level < current && u.Type == Upgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.Type != Upgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	switch u.Name {
	case MetadataVersion:
		return metadataVersionCheck(current, u)
	case KRaftVersion:
		// The quorum's own version: an upgrade to the level it has
		// changes nothing; a static single-node quorum cannot move.
		if u.Type != Upgrade && u.Level != current {
			return invalid("Can't downgrade the version of this feature.")
		}
		return ""
	}
	if !knownIn(s.release.Name, u.Name) {
		// Feature.featureFromName knows its release's features only.
		return invalid(fmt.Sprintf("Feature %s not found.", u.Name))
	}
	for dep, need := range dependencies[u.Name][u.Level] {
		if proposed[dep] < need {
			return invalid(fmt.Sprintf("%s could not be set to %d because it depends on %s level %d", u.Name, u.Level, dep, need))
		}
	}
	return ""
}

// metadataVersionCheck is FeatureControlManager.updateMetadataVersion: a
// downgrade is allowed only when no level between changed the metadata
// format (MetadataVersion.checkIfMetadataChanged), and never unsafely.
func metadataVersionCheck(current int16, u Update) string {
	if u.Level >= current {
		return ""
	}
	changed := false
	for l := u.Level + 1; l <= current; l++ {
		changed = changed || metadataChanged[l]
	}
	if !changed {
		return ""
	}
	msg := "Refusing to perform the requested downgrade because it might delete metadata information."
	if u.Type == UnsafeDowngrade {
		msg = "Unsafe metadata downgrade is not supported in this version."
	}
	return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", current, u.Level, msg)
}

// javaHashMapOrder returns names (distinct, in insertion order) in the
// order a java.util.HashMap<String, ?> holding them iterates: by bucket
// (the spread String.hashCode masked to the table size, 16 doubled while
// more than three quarters full), insertion order within one. Kafka checks
// an UpdateFeatures request's rows in that order, so which refusal a
// request with two bad rows gets follows it.
func javaHashMapOrder(names []string) []string {
	size := 16
	for len(names) > size*3/4 {
		size *= 2
	}
	bucket := func(s string) int {
		var h int32
		for _, c := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(c)
		}
		return int((h ^ int32(uint32(h)>>16)) & int32(size-1))
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int { return bucket(a) - bucket(b) })
	return out
}
