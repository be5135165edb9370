// Package seed is the state a broker is given at start (docs/seeding.md):
// topics, GROUP configs, SCRAM users and ACLs, read from flags, their
// SHAREBROKER_* variables, one JSON file (--seed FILE) or Go values
// (sharebrokertest's options), and applied before the Kafka listeners
// accept (seed-before-listen).
//
// Each item is made through the package that owns it and checked as the
// Kafka API that makes it would check it: a topic by storage.EnsureTopic
// and brokerconfig.ValidateTopicConfigs (CreateTopics), GROUP configs by
// group.ConfigStore.Ensure (IncrementalAlterConfigs), SCRAM users by
// auth.Credentials.EnsureSCRAM (AlterUserScramCredentials), ACLs by
// acl.Validate and acl.Authorizer.Create (CreateAcls). What exists already
// with the same settings is left alone (seed-idempotent); what exists with
// others stops the start (seed-conflict). This package imports neither
// kmsg nor wire nor broker (deps_test.go).
package seed

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// Seed is everything given at start. The zero value seeds nothing.
type Seed struct {
	Topics       []Topic
	GroupConfigs []GroupConfig
	SCRAMUsers   []SCRAMUser
	ACLs         []ACL
}

// Empty reports whether s seeds nothing.
func (s Seed) Empty() bool {
	return len(s.Topics) == 0 && len(s.GroupConfigs) == 0 && len(s.SCRAMUsers) == 0 && len(s.ACLs) == 0
}

// Add appends o's items after s's.
func (s *Seed) Add(o Seed) {
	s.Topics = append(s.Topics, o.Topics...)
	s.GroupConfigs = append(s.GroupConfigs, o.GroupConfigs...)
	s.SCRAMUsers = append(s.SCRAMUsers, o.SCRAMUsers...)
	s.ACLs = append(s.ACLs, o.ACLs...)
}

// DefaultPartitions as a Topic's Partitions means the broker's
// num.partitions, as -1 does in CreateTopics.
const DefaultPartitions = -1

// Topic is a topic to exist.
type Topic struct {
	Name string
	// Partitions is the partition count; DefaultPartitions for
	// num.partitions.
	Partitions int32
	// Configs are the topic's overrides (Kafka's topic properties).
	Configs map[string]string
	// From says where the item came from, for errors: a flag and its
	// value, a file and the item's place in it.
	From string
}

// GroupConfig is GROUP config overrides of one group ID (share-groups.md
// §5.6), whether or not the group exists.
type GroupConfig struct {
	Group   string
	Configs map[string]string
	From    string
}

// SCRAMUser is one SCRAM credential, as kafka-storage format --add-scram
// gives one.
type SCRAMUser struct {
	Name string
	// Mechanism is SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	Password  string
	// Iterations; 0 means 4096, Kafka's default.
	Iterations int32
	From       string
}

// ACL is one ACL binding, its codes by name as GET /v1/acls and Kafka's
// AclBinding write them (TOPIC, PREFIXED, READ, ALLOW; kafka-acls.sh's
// Read and TransactionalId are accepted too).
type ACL struct {
	Principal string
	// Host is "*" when empty.
	Host      string
	Operation string
	// PermissionType is ALLOW when empty.
	PermissionType string
	ResourceType   string
	// ResourceName is kafka-cluster when empty for a CLUSTER ACL.
	ResourceName string
	// PatternType is LITERAL when empty.
	PatternType string
	From        string
}

// Binding is the ACL as the authorizer holds it. A name that is no code's
// is an error naming the field.
func (a ACL) Binding() (acl.Binding, error) {
	b := acl.Binding{Principal: a.Principal, Host: a.Host, ResourceName: a.ResourceName,
		Permission: acl.Allow, PatternType: acl.PatternLiteral}
	if b.Host == "" {
		b.Host = acl.Wildcard
	}
	var ok bool
	if b.ResourceType, ok = acl.ParseResourceType(a.ResourceType); !ok {
		return b, fmt.Errorf("resource type %q: want TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN or USER", a.ResourceType)
	}
	if b.ResourceType == acl.ResourceCluster && b.ResourceName == "" {
		b.ResourceName = acl.ClusterName
	}
	if b.Operation, ok = acl.ParseOperation(a.Operation); !ok {
		return b, fmt.Errorf("operation %q: want one of %s", a.Operation, operationNames())
	}
	if a.PermissionType != "" {
		if b.Permission, ok = acl.ParsePermission(a.PermissionType); !ok {
			return b, fmt.Errorf("permission type %q: want ALLOW or DENY", a.PermissionType)
		}
	}
	if a.PatternType != "" {
		if b.PatternType, ok = acl.ParsePatternType(a.PatternType); !ok {
			return b, fmt.Errorf("pattern type %q: want LITERAL or PREFIXED", a.PatternType)
		}
	}
	return b, nil
}

func operationNames() string {
	var names []string
	for op := acl.OpAll; op.Known(); op++ {
		names = append(names, op.String())
	}
	return strings.Join(names, ", ")
}

// ErrConflict is a seeded item that exists already with other settings
// (seed-conflict); the error names the item and what differs.
var ErrConflict = errors.New("seed conflict")

// Target is what Apply seeds: the broker's own stores.
type Target struct {
	Store *storage.Store
	// NumPartitions is num.partitions, for DefaultPartitions.
	NumPartitions int32
	GroupConfigs  *group.ConfigStore
	// GroupConfigChanged is told each group whose overrides the seed
	// changed, as an alter tells it (share partitions that exist
	// already, from a data directory, take the new values).
	GroupConfigChanged func(groupID string) error
	Credentials        *auth.Credentials
	// Authorizer is nil when authorization is off; then an ACL is
	// refused as CreateAcls refuses it.
	Authorizer *acl.Authorizer
	Log        *slog.Logger
}

// Apply makes s exist in t. Every item is checked before any is made
// (validate, then mutate): a bad or conflicting item stops the start with
// nothing of the seed made. The error names the item and where it came
// from.
func Apply(s Seed, t Target) error {
	if err := s.checkRepeats(); err != nil {
		return err
	}
	// One group's items are checked and set together, as one
	// IncrementalAlterConfigs resource: a pair that must agree (a session
	// timeout above its heartbeat interval) may come in two items.
	s.GroupConfigs = mergeGroups(s.GroupConfigs)
	bindings := make([]acl.Binding, len(s.ACLs))
	for i, a := range s.ACLs {
		b, err := a.Binding()
		if err == nil {
			err = acl.Validate(b)
		}
		if err == nil && t.Authorizer == nil {
			// CreateAcls' answer without an authorizer (SECURITY_DISABLED).
			err = errors.New(`authorization is off: set authorizer.class.name to create ACLs (CreateAcls answers SECURITY_DISABLED, "No Authorizer is configured.")`)
		}
		if err != nil {
			return itemError(aclItem(a), err)
		}
		bindings[i] = b
	}
	var asked storage.NewPartitions
	for _, tp := range s.Topics {
		n := tp.partitions(t.NumPartitions)
		if err := brokerconfig.ValidateTopicConfigs(tp.Configs); err != nil {
			return itemError(topicItem(tp), err)
		}
		if t.Store.Topic(tp.Name) == nil {
			// The topics the seed creates count as one CreateTopics
			// (partitions-per-request-limit).
			if err := asked.Add(int64(max(n, 0))); err != nil {
				return itemError(topicItem(tp), err)
			}
		}
		if _, err := t.Store.EnsureTopic(tp.Name, n, tp.Configs, true); err != nil {
			return itemError(topicItem(tp), err)
		}
	}
	for _, g := range s.GroupConfigs {
		if _, err := t.GroupConfigs.Ensure(g.Group, g.Configs, true); err != nil {
			return itemError(groupItem(g), err)
		}
	}
	for _, u := range s.SCRAMUsers {
		if _, err := t.Credentials.EnsureSCRAM(u.Name, u.Mechanism, u.Password, u.Iterations, true); err != nil {
			return itemError(scramItem(u), err)
		}
	}

	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var made, kept int
	count := func(created bool, what string, attrs ...any) {
		if created {
			made++
			log.Info("seeded "+what, attrs...)
			return
		}
		kept++
		log.Debug("seeded "+what+" exists already", attrs...)
	}
	for _, tp := range s.Topics {
		created, err := t.Store.EnsureTopic(tp.Name, tp.partitions(t.NumPartitions), tp.Configs, false)
		if err != nil {
			return itemError(topicItem(tp), err)
		}
		count(created, "topic", "topic", tp.Name)
	}
	for _, g := range s.GroupConfigs {
		changed, err := t.GroupConfigs.Ensure(g.Group, g.Configs, false)
		if err != nil {
			return itemError(groupItem(g), err)
		}
		if changed && t.GroupConfigChanged != nil {
			if err := t.GroupConfigChanged(g.Group); err != nil {
				return itemError(groupItem(g), err)
			}
		}
		count(changed, "group configs", "group", g.Group)
	}
	for _, u := range s.SCRAMUsers {
		created, err := t.Credentials.EnsureSCRAM(u.Name, u.Mechanism, u.Password, u.Iterations, false)
		if err != nil {
			return itemError(scramItem(u), err)
		}
		count(created, "SCRAM user", "user", u.Name, "mechanism", u.Mechanism)
	}
	if len(bindings) > 0 {
		before := len(t.Authorizer.List())
		for i, err := range t.Authorizer.Create(bindings) {
			if err != nil { // validated above; kept for a binding the authorizer refuses anyway
				return itemError(aclItem(s.ACLs[i]), err)
			}
		}
		added := len(t.Authorizer.List()) - before
		made, kept = made+added, kept+len(bindings)-added
		if added > 0 {
			log.Info("seeded ACLs", "created", added)
		}
	}
	log.Info("seed applied", "created", made, "existing", kept)
	return nil
}

func (tp Topic) partitions(numPartitions int32) int32 {
	if tp.Partitions == DefaultPartitions {
		return numPartitions
	}
	return tp.Partitions
}

// checkRepeats refuses an item the seed gives twice, as a request naming
// a resource twice is refused: a topic, a group's config, a user's
// credential of one mechanism. A repeated ACL is one ACL (acl-set).
func (s Seed) checkRepeats() error {
	topics := make(map[string]Topic)
	for _, tp := range s.Topics {
		if first, ok := topics[tp.Name]; ok {
			return fmt.Errorf("seed: topic %q is given twice: %s and %s", tp.Name, first.From, tp.From)
		}
		topics[tp.Name] = tp
	}
	groupKeys := make(map[[2]string]GroupConfig)
	for _, g := range s.GroupConfigs {
		for _, k := range slices.Sorted(maps.Keys(g.Configs)) {
			key := [2]string{g.Group, k}
			if first, ok := groupKeys[key]; ok {
				return fmt.Errorf("seed: group config %s of group %q is given twice: %s and %s", k, g.Group, first.From, g.From)
			}
			groupKeys[key] = g
		}
	}
	users := make(map[[2]string]SCRAMUser)
	for _, u := range s.SCRAMUsers {
		key := [2]string{u.Name, u.Mechanism}
		if first, ok := users[key]; ok {
			return fmt.Errorf("seed: SCRAM user %q (%s) is given twice: %s and %s", u.Name, u.Mechanism, first.From, u.From)
		}
		users[key] = u
	}
	return nil
}

// mergeGroups joins the items of each group into one, in the order the
// groups first appear; checkRepeats has refused a key given twice.
func mergeGroups(items []GroupConfig) []GroupConfig {
	var out []GroupConfig
	at := make(map[string]int)
	for _, g := range items {
		i, ok := at[g.Group]
		if !ok {
			at[g.Group] = len(out)
			out = append(out, GroupConfig{Group: g.Group, Configs: maps.Clone(g.Configs), From: g.From})
			continue
		}
		maps.Copy(out[i].Configs, g.Configs)
		out[i].From += "; " + g.From
	}
	return out
}

// itemError names the item in err; a conflict also says how to resolve
// it.
func itemError(item string, err error) error {
	if errors.Is(err, storage.ErrTopicExists) || errors.Is(err, group.ErrConfigConflict) || errors.Is(err, auth.ErrCredentialConflict) {
		return fmt.Errorf("seed: %s: %w: %w; the broker holds it already (from the data directory or another flag) with other settings: make the seed match, or change what is held", item, ErrConflict, err)
	}
	return fmt.Errorf("seed: %s: %w", item, err)
}

func topicItem(tp Topic) string { return fmt.Sprintf("topic %q%s", tp.Name, from(tp.From)) }
func groupItem(g GroupConfig) string {
	return fmt.Sprintf("group config of group %q%s", g.Group, from(g.From))
}
func scramItem(u SCRAMUser) string {
	return fmt.Sprintf("SCRAM user %q (%s)%s", u.Name, u.Mechanism, from(u.From))
}
func aclItem(a ACL) string {
	perm := a.PermissionType
	if perm == "" {
		perm = "ALLOW"
	}
	return fmt.Sprintf("ACL %s %s on %s %q for %s%s", perm, a.Operation, a.ResourceType, a.ResourceName, a.Principal, from(a.From))
}

func from(where string) string {
	if where == "" {
		return ""
	}
	return " (" + where + ")"
}
