package configdef

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		def   Def
		value string
		want  string // "" for valid
	}{
		{Def{Name: "i", Kind: Int, Min: 1, Max: 10}, " 5 ", ""},
		{Def{Name: "i", Kind: Int, Min: 1, Max: 10}, "11", "i: 11 is outside [1, 10]"},
		{Def{Name: "i", Kind: Int, Min: 0, Max: Int32Max}, "2147483648", `i: "2147483648" is not a whole number`},
		{Def{Name: "l", Kind: Long, Min: -1, Max: Int64Max}, "2147483648", ""},
		{Def{Name: "b", Kind: Bool}, "TRUE", ""},
		{Def{Name: "b", Kind: Bool}, "yes", `b: "yes" is not true or false`},
		{Def{Name: "e", Kind: Enum, Enum: []string{"a", "b"}}, "c", `e: "c" is not one of a, b`},
		{Def{Name: "l", Kind: List, Enum: []string{"a", "b"}}, "a, b", ""},
		{Def{Name: "l", Kind: List, Enum: []string{"a", "b"}}, " , ", "l: the list is empty; give one or more of a, b"},
		{Def{Name: "l", Kind: List, Enum: []string{"a", "b"}}, "a,a", `l: "a" is listed twice`},
		{Def{Name: "d", Kind: Double, MinFloat: 0, MaxFloat: 1}, "NaN", "d: NaN is outside [0, 1]"},
		{Def{Name: "s", Kind: String}, "", ""},
	}
	for _, tt := range tests {
		err := tt.def.Validate(tt.value)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %q: %v", tt.def.Name, tt.value, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %q: got %v, want %q", tt.def.Name, tt.value, err, tt.want)
		}
	}
}
