package seed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// The seed file (--seed FILE, docs/seeding.md "The seed file"): one JSON
// object with up to four lists. Keys are exact; an unknown one is an
// error naming it, so a misspelt key never passes silently.
//
//	{
//	  "topics":       [{"name": "orders", "partitions": 3, "configs": {"retention.ms": "86400000"}}],
//	  "groupConfigs": [{"group": "workers", "configs": {"share.auto.offset.reset": "earliest"}}],
//	  "scramUsers":   [{"name": "alice", "mechanism": "SCRAM-SHA-512", "password": "alice-secret"}],
//	  "acls":         [{"principal": "User:alice", "operation": "READ", "resourceType": "TOPIC", "resourceName": "orders"}]
//	}
//
// An ACL has GET /v1/acls's fields, so that list can be pasted in.

type fileSeed struct {
	Schema       string            `json:"$schema"`
	Topics       []json.RawMessage `json:"topics"`
	GroupConfigs []json.RawMessage `json:"groupConfigs"`
	SCRAMUsers   []json.RawMessage `json:"scramUsers"`
	ACLs         []json.RawMessage `json:"acls"`
}

type fileTopic struct {
	Name string `json:"name"`
	// Partitions absent is num.partitions, as -1 is.
	Partitions *int32  `json:"partitions"`
	Configs    configs `json:"configs"`
}

type fileGroupConfig struct {
	Group   string  `json:"group"`
	Configs configs `json:"configs"`
}

type fileSCRAMUser struct {
	Name       string `json:"name"`
	Mechanism  string `json:"mechanism"`
	Password   string `json:"password"`
	Iterations int32  `json:"iterations"`
}

type fileACL struct {
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      string `json:"operation"`
	PermissionType string `json:"permissionType"`
	ResourceType   string `json:"resourceType"`
	ResourceName   string `json:"resourceName"`
	PatternType    string `json:"patternType"`
}

// configs are property values: JSON strings, or numbers and booleans,
// which are taken as written ("retention.ms": 60000).
type configs map[string]string

func (c *configs) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = make(configs, len(raw))
	for k, v := range raw {
		var s string
		switch v = bytes.TrimSpace(v); {
		case len(v) > 0 && v[0] == '"':
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
		case string(v) == "true" || string(v) == "false":
			s = string(v)
		case json.Valid(v) && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
			s = string(v)
		default:
			return fmt.Errorf("config %s: want a string, number or boolean, not %s", k, v)
		}
		(*c)[k] = s
	}
	return nil
}

// ReadFile reads a seed file. An error names the file and, past the
// top level, the item (its list, index and name).
func ReadFile(path string) (Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Seed{}, fmt.Errorf("seed file: %w", err)
	}
	s, err := Parse(data, path)
	if err != nil {
		return Seed{}, fmt.Errorf("seed file %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a seed file's contents; name is where each item says it
// came from.
func Parse(data []byte, name string) (Seed, error) {
	var f fileSeed
	if err := decodeStrict(data, &f); err != nil {
		return Seed{}, where(data, err)
	}
	var s Seed
	for i, raw := range f.Topics {
		var ft fileTopic
		if err := decodeStrict(raw, &ft); err != nil {
			return s, fmt.Errorf("topics[%d]%s: %w", i, named(raw, "name"), err)
		}
		t := Topic{Name: ft.Name, Partitions: DefaultPartitions, Configs: ft.Configs, From: fmt.Sprintf("%s: topics[%d]", name, i)}
		if ft.Partitions != nil {
			t.Partitions = *ft.Partitions
		}
		if t.Name == "" {
			return s, fmt.Errorf("topics[%d]: no \"name\"", i)
		}
		s.Topics = append(s.Topics, t)
	}
	for i, raw := range f.GroupConfigs {
		var fg fileGroupConfig
		if err := decodeStrict(raw, &fg); err != nil {
			return s, fmt.Errorf("groupConfigs[%d]%s: %w", i, named(raw, "group"), err)
		}
		if fg.Group == "" || len(fg.Configs) == 0 {
			return s, fmt.Errorf("groupConfigs[%d]: want \"group\" and at least one of \"configs\"", i)
		}
		s.GroupConfigs = append(s.GroupConfigs, GroupConfig{Group: fg.Group, Configs: fg.Configs, From: fmt.Sprintf("%s: groupConfigs[%d]", name, i)})
	}
	for i, raw := range f.SCRAMUsers {
		var fu fileSCRAMUser
		if err := decodeStrict(raw, &fu); err != nil {
			return s, fmt.Errorf("scramUsers[%d]%s: %w", i, named(raw, "name"), err)
		}
		if fu.Name == "" || fu.Mechanism == "" || fu.Password == "" {
			return s, fmt.Errorf("scramUsers[%d]%s: want \"name\", \"mechanism\" and \"password\"", i, named(raw, "name"))
		}
		s.SCRAMUsers = append(s.SCRAMUsers, SCRAMUser{Name: fu.Name, Mechanism: fu.Mechanism, Password: fu.Password,
			Iterations: fu.Iterations, From: fmt.Sprintf("%s: scramUsers[%d]", name, i)})
	}
	for i, raw := range f.ACLs {
		var fa fileACL
		if err := decodeStrict(raw, &fa); err != nil {
			return s, fmt.Errorf("acls[%d]: %w", i, err)
		}
		a := ACL{Principal: fa.Principal, Host: fa.Host, Operation: fa.Operation, PermissionType: fa.PermissionType,
			ResourceType: fa.ResourceType, ResourceName: fa.ResourceName, PatternType: fa.PatternType,
			From: fmt.Sprintf("%s: acls[%d]", name, i)}
		if _, err := a.Binding(); err != nil {
			return s, fmt.Errorf("acls[%d]: %w", i, err)
		}
		s.ACLs = append(s.ACLs, a)
	}
	return s, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown keys and
// anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty: want a JSON object")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more after the JSON object")
	}
	return nil
}

// named is ` ("NAME")` when raw is an object whose key holds a string.
func named(raw json.RawMessage, key string) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	if s, ok := m[key].(string); ok {
		return " (" + strconv.Quote(s) + ")"
	}
	return ""
}

// where adds the line and column to a JSON error that has an offset.
func where(data []byte, err error) error {
	var offset int64 = -1
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	if offset < 0 || offset > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	col := offset - int64(bytes.LastIndexByte(data[:offset], '\n'))
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
