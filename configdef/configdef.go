// Package configdef declares configuration properties: the one form in
// which every Kafka configuration name the broker honours is written down,
// with its default, type, bounds and meaning, and the check of a value
// against them. Broker and topic properties are declared in brokerconfig,
// the group.share.* broker properties and the GROUP configs in group;
// brokerconfig gathers them into the broker's table, from which --config,
// DescribeConfigs and the README's configuration reference are made.
//
// It imports only the standard library, so a domain package may declare
// its own properties with it.
package configdef

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is a property's type, as Kafka's ConfigDef names them.
type Kind int8

// Kinds.
const (
	Int Kind = iota + 1
	Long
	Bool
	String
	Enum   // a string, one of Def.Enum
	List   // comma-separated items, each one of Def.Enum
	Double // a decimal number within [Def.MinFloat, Def.MaxFloat]
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "INT"
	case Long:
		return "LONG"
	case Bool:
		return "BOOLEAN"
	case Enum, String:
		return "STRING"
	case List:
		return "LIST"
	case Double:
		return "DOUBLE"
	}
	return "UNKNOWN"
}

// Scope is where a property is set.
type Scope int8

// Scopes.
const (
	Broker Scope = iota + 1 // at start (--config key=value)
	Topic                   // per topic, falling back to its broker synonym
	Group                   // per group ID (GROUP resources), checked by the group package
)

// Bounds of Kafka's INT and LONG.
const (
	Int32Max = 1<<31 - 1
	Int64Max = 1<<63 - 1
)

// Def declares one property.
type Def struct {
	Name  string
	Scope Scope
	Kind  Kind
	// Default is the value when nothing sets one. A topic property with a
	// Synonym takes that broker property's instead and leaves it empty.
	Default string
	// Synonym names the broker property that supplies the default (topic
	// scope), or that the reference names as the default (group scope).
	Synonym string
	Enum    []string // Enum: the accepted values; List: the accepted items
	// Min and Max bound Int and Long values, inclusive.
	Min, Max int64
	// MinFloat and MaxFloat bound Double values, inclusive.
	MinFloat, MaxFloat float64
	// Doc is the property's meaning, as the README's reference gives it.
	Doc string
}

// Validate checks one value against the property's type and bounds; the
// error names the property. GROUP configs have checks of their own in the
// group package, which depend on the broker's configuration.
func (d *Def) Validate(value string) error {
	switch d.Kind {
	case Int, Long:
		bits := 64
		if d.Kind == Int {
			bits = 32
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, bits)
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", d.Name, value)
		}
		if n < d.Min || n > d.Max {
			return fmt.Errorf("%s: %d is outside [%d, %d]", d.Name, n, d.Min, d.Max)
		}
	case Bool:
		if v := strings.ToLower(strings.TrimSpace(value)); v != "true" && v != "false" {
			return fmt.Errorf("%s: %q is not true or false", d.Name, value)
		}
	case Enum:
		if !slices.Contains(d.Enum, strings.TrimSpace(value)) {
			return fmt.Errorf("%s: %q is not one of %s", d.Name, value, strings.Join(d.Enum, ", "))
		}
	case List:
		items := SplitList(value)
		if len(items) == 0 {
			return fmt.Errorf("%s: the list is empty; give one or more of %s", d.Name, strings.Join(d.Enum, ", "))
		}
		for i, item := range items {
			if !slices.Contains(d.Enum, item) {
				return fmt.Errorf("%s: %q is not one of %s", d.Name, item, strings.Join(d.Enum, ", "))
			}
			if slices.Contains(items[:i], item) {
				return fmt.Errorf("%s: %q is listed twice", d.Name, item)
			}
		}
	case Double:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", d.Name, value)
		}
		if !(f >= d.MinFloat && f <= d.MaxFloat) { // also rejects NaN
			return fmt.Errorf("%s: %v is outside [%v, %v]", d.Name, f, d.MinFloat, d.MaxFloat)
		}
	}
	return nil
}

// SplitList splits a list value at commas, trimming spaces and dropping
// empty items, as Kafka parses its LIST properties.
func SplitList(value string) []string {
	var items []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
