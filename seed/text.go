package seed

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The flag forms (docs/seeding.md, "Flags"). Each flag is repeatable, and
// one value may hold several items separated by semicolons or line
// breaks, so that one SHAREBROKER_* variable gives them all. Within an
// item, lists are separated by commas; a value holding a comma, a
// semicolon or an equals sign is written in double quotes or, as
// kafka-configs.sh writes list values, in square brackets:
// cleanup.policy=[compact,delete].

// Flags are the seed's flags as given: FromFlags reads them.
type Flags struct {
	// File is --seed: a JSON file (ReadFile).
	File string
	// Topics are --topic NAME[:PARTITIONS[:KEY=VALUE,...]].
	Topics []string
	// GroupConfigs are --group-config GROUP:KEY=VALUE[,KEY=VALUE...].
	GroupConfigs []string
	// SCRAMUsers are --scram-user MECHANISM=[name=NAME,password=PASSWORD[,iterations=N]].
	SCRAMUsers []string
	// ACLs are --acl with kafka-acls.sh's option names as keys:
	// allow-principal=User:alice,operation=Read,topic=orders.
	ACLs []string
}

// FromFlags reads the seed file, then each flag's items, in that order.
// An error names the flag and the item (never a password).
func FromFlags(f Flags) (Seed, error) {
	var s Seed
	if f.File != "" {
		fs, err := ReadFile(f.File)
		if err != nil {
			return s, err
		}
		s.Add(fs)
	}
	for _, v := range f.Topics {
		for _, item := range SplitItems(v) {
			t, err := ParseTopic(item)
			if err != nil {
				return s, fmt.Errorf("--topic %q: %w", item, err)
			}
			s.Topics = append(s.Topics, t)
		}
	}
	for _, v := range f.GroupConfigs {
		for _, item := range SplitItems(v) {
			g, err := ParseGroupConfig(item)
			if err != nil {
				return s, fmt.Errorf("--group-config %q: %w", item, err)
			}
			s.GroupConfigs = append(s.GroupConfigs, g)
		}
	}
	for _, v := range f.SCRAMUsers {
		for i, item := range SplitItems(v) {
			u, err := ParseSCRAMUser(item)
			if err != nil {
				// The item holds a password: name the user, if found.
				who := u.Name
				if who == "" {
					who = fmt.Sprintf("item %d", i+1)
				}
				return s, fmt.Errorf("--scram-user (%s): %w", who, err)
			}
			s.SCRAMUsers = append(s.SCRAMUsers, u)
		}
	}
	for _, v := range f.ACLs {
		for _, item := range SplitItems(v) {
			a, err := ParseACL(item)
			if err != nil {
				return s, fmt.Errorf("--acl %q: %w", item, err)
			}
			s.ACLs = append(s.ACLs, a)
		}
	}
	return s, nil
}

// ParseTopic reads NAME[:PARTITIONS[:KEY=VALUE,...]]. PARTITIONS empty or
// -1 is num.partitions.
func ParseTopic(item string) (Topic, error) {
	name, rest, _ := strings.Cut(strings.TrimSpace(item), ":")
	count, configs, _ := strings.Cut(rest, ":")
	t := Topic{Name: name, Partitions: DefaultPartitions, From: fmt.Sprintf("--topic %q", item)}
	if name == "" {
		return t, errors.New("no topic name: want NAME[:PARTITIONS[:KEY=VALUE,...]]")
	}
	if count = strings.TrimSpace(count); count != "" {
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			return t, fmt.Errorf("partition count %q is not a number", count)
		}
		t.Partitions = int32(n)
	}
	var err error
	t.Configs, err = parseConfigs(configs)
	return t, err
}

// ParseGroupConfig reads GROUP:KEY=VALUE[,KEY=VALUE...]. The group ID
// ends at the last colon before the first equals sign, so a group ID may
// hold colons and a value too (share.auto.offset.reset=by_duration:PT1H).
func ParseGroupConfig(item string) (GroupConfig, error) {
	item = strings.TrimSpace(item)
	g := GroupConfig{From: fmt.Sprintf("--group-config %q", item)}
	eq := strings.IndexByte(item, '=')
	colon := -1
	if eq > 0 {
		colon = strings.LastIndexByte(item[:eq], ':')
	}
	if colon <= 0 {
		return g, errors.New("want GROUP:KEY=VALUE[,KEY=VALUE...]")
	}
	g.Group = item[:colon]
	var err error
	if g.Configs, err = parseConfigs(item[colon+1:]); err == nil && len(g.Configs) == 0 {
		err = errors.New("no config: want GROUP:KEY=VALUE[,KEY=VALUE...]")
	}
	return g, err
}

// ParseSCRAMUser reads kafka-storage format's --add-scram form,
// MECHANISM=[name=NAME,password=PASSWORD[,iterations=N]], as Kafka's
// ScramParser does (a value may be in double quotes). Kafka's salt and
// saltedpassword are not taken: the broker salts the password.
func ParseSCRAMUser(item string) (SCRAMUser, error) {
	item = strings.TrimSpace(item)
	mech, body, ok := strings.Cut(item, "=")
	u := SCRAMUser{Mechanism: strings.TrimSpace(mech)}
	if !ok || !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return u, errors.New("want SCRAM-SHA-256=[name=NAME,password=PASSWORD] or SCRAM-SHA-512=[...]")
	}
	var unknown []string
	for _, part := range splitOutside(body[1:len(body)-1], ',') {
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return u, fmt.Errorf("no equals sign in SCRAM component %q", k)
		}
		v = unquote(v)
		switch k {
		case "name":
			u.Name = v
		case "password":
			u.Password = v
		case "iterations":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return u, fmt.Errorf("iterations %q is not a number", v)
			}
			u.Iterations = int32(n)
		default:
			unknown = append(unknown, k)
		}
	}
	u.From = fmt.Sprintf("--scram-user %s=[name=%s,...]", u.Mechanism, u.Name)
	switch {
	case len(unknown) > 0:
		return u, fmt.Errorf("unknown SCRAM configurations: %s (name, password and iterations are taken)", strings.Join(unknown, ", "))
	case u.Name == "":
		return u, errors.New("no name: give name=NAME")
	case u.Password == "":
		return u, errors.New("no password: give password=PASSWORD")
	}
	return u, nil
}

// aclResources are kafka-acls.sh's resource options, each the key of an
// --acl item that names the resource.
var aclResources = map[string]string{
	"topic":            "TOPIC",
	"group":            "GROUP",
	"cluster":          "CLUSTER",
	"transactional-id": "TRANSACTIONAL_ID",
	"delegation-token": "DELEGATION_TOKEN",
	"user-principal":   "USER",
}

// ParseACL reads one ACL written with kafka-acls.sh's option names:
// allow-principal or deny-principal, operation, one resource (topic,
// group, cluster, transactional-id, delegation-token, user-principal),
// and optionally resource-pattern-type (literal, prefixed) and
// allow-host or deny-host. kafka-acls.sh --add --allow-principal
// User:alice --operation Read --topic orders is
// allow-principal=User:alice,operation=Read,topic=orders. One item is one
// ACL: one principal, one operation, one resource.
func ParseACL(item string) (ACL, error) {
	item = strings.TrimSpace(item)
	a := ACL{From: fmt.Sprintf("--acl %q", item)}
	seen := make(map[string]bool)
	var hostKey string
	for _, part := range splitOutside(item, ',') {
		k, v, _ := strings.Cut(part, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = unquote(v)
		if seen[k] {
			return a, fmt.Errorf("%s given twice: one item is one ACL", k)
		}
		seen[k] = true
		if typ, ok := aclResources[k]; ok {
			if a.ResourceType != "" {
				return a, fmt.Errorf("two resources (%s and %s): one item is one ACL", strings.ToLower(a.ResourceType), k)
			}
			a.ResourceType, a.ResourceName = typ, v
			continue
		}
		switch k {
		case "allow-principal", "deny-principal":
			if a.Principal != "" {
				return a, errors.New("both allow-principal and deny-principal: one item is one ACL")
			}
			a.Principal, a.PermissionType = v, "ALLOW"
			if k == "deny-principal" {
				a.PermissionType = "DENY"
			}
		case "allow-host", "deny-host":
			hostKey, a.Host = k, v
		case "operation":
			a.Operation = v
		case "resource-pattern-type":
			a.PatternType = v
		default:
			return a, fmt.Errorf("unknown key %q: want allow-principal or deny-principal, operation, one of topic, group, cluster, transactional-id, delegation-token, user-principal, and optionally resource-pattern-type and allow-host or deny-host", k)
		}
	}
	switch {
	case a.Principal == "":
		return a, errors.New("no principal: give allow-principal=User:NAME or deny-principal=User:NAME")
	case a.Operation == "":
		return a, errors.New("no operation: give operation=Read (or Write, Describe, ...)")
	case a.ResourceType == "":
		return a, errors.New("no resource: give topic=, group=, cluster, transactional-id=, delegation-token= or user-principal=")
	case hostKey != "" && (hostKey == "allow-host") != (a.PermissionType == "ALLOW"):
		// kafka-acls.sh applies --allow-host to allow principals and
		// --deny-host to deny ones.
		return a, fmt.Errorf("%s with a %s principal", hostKey, strings.ToLower(a.PermissionType))
	}
	if _, err := a.Binding(); err != nil {
		return a, err
	}
	return a, nil
}

// parseConfigs reads KEY=VALUE,... into a map; a key given twice is an
// error.
func parseConfigs(list string) (map[string]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	out := make(map[string]string)
	for _, part := range splitOutside(list, ',') {
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config %q: want KEY=VALUE", strings.TrimSpace(part))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("config %s given twice", k)
		}
		out[k] = unquote(v)
	}
	return out, nil
}

// SplitItems splits a flag's value into its items: at semicolons and line
// breaks outside quotes and brackets, each trimmed, empty ones dropped.
func SplitItems(value string) []string {
	var out []string
	for _, line := range strings.Split(value, "\n") {
		for _, item := range splitOutside(line, ';') {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// splitOutside splits s at sep where it is outside double quotes and
// square brackets.
func splitOutside(s string, sep byte) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[':
			depth++
		case c == ']' && depth > 0:
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote trims v and takes off one pair of double quotes or square
// brackets around it.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '[' && v[len(v)-1] == ']') {
		return v[1 : len(v)-1]
	}
	return v
}
