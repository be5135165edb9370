package main

// A reader for the parts of Java's JAAS configuration syntax Kafka
// brokers use (javax.security.auth.login.ConfigFile): sections
//
//	Name { module.Class flag key="value" key2=value2; ... };
//
// with // and /* */ comments, and the same entries alone as the value of
// a sasl.jaas.config property (kafka-jaas-users).

import (
	"fmt"
	"strings"

	"github.com/sharebroker/sharebroker/broker"
)

// jaasTokens splits JAAS text into words, quoted strings (quotes kept),
// and the punctuation { } ; =.
func jaasTokens(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("comment not closed")
			}
			i += end + 4
		case c == '{' || c == '}' || c == ';' || c == '=':
			out = append(out, string(c))
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("quoted value not closed")
			}
			out = append(out, s[i:j+1])
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r{};=\"'", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out, nil
}

// parseJAASFile returns each section's entries as text, by section name.
func parseJAASFile(s string) (map[string]string, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for i := 0; i < len(toks); {
		if i+1 >= len(toks) || toks[i+1] != "{" {
			return nil, fmt.Errorf("want NAME { ... }; at %q", toks[i])
		}
		name := toks[i]
		j := i + 2
		for j < len(toks) && toks[j] != "}" {
			j++
		}
		if j >= len(toks) {
			return nil, fmt.Errorf("section %s not closed", name)
		}
		out[name] = strings.Join(toks[i+2:j], " ")
		i = j + 1
		if i < len(toks) && toks[i] == ";" {
			i++
		}
	}
	return out, nil
}

// jaasPlainUsers returns the users of the PlainLoginModule entries in
// JAAS entries text: each option user_NAME="PASSWORD" is one.
func jaasPlainUsers(entries string) ([]broker.SASLUser, error) {
	toks, err := jaasTokens(entries)
	if err != nil {
		return nil, err
	}
	var users []broker.SASLUser
	for i := 0; i < len(toks); {
		// module flag (key = value)* ;
		if i+1 >= len(toks) {
			return nil, fmt.Errorf("want MODULE FLAG OPTIONS; at %q", toks[i])
		}
		module := toks[i]
		i += 2
		for i < len(toks) && toks[i] != ";" {
			if i+2 >= len(toks) || toks[i+1] != "=" {
				return nil, fmt.Errorf("%s: want KEY=VALUE at %q", module, toks[i])
			}
			key, value := toks[i], unquoteJAAS(toks[i+2])
			i += 3
			if name, ok := strings.CutPrefix(key, "user_"); ok && strings.HasSuffix(module, "PlainLoginModule") {
				u, err := broker.ParseSASLUser(name + ":" + value)
				if err != nil {
					return nil, fmt.Errorf("%s: user %q: %v", module, name, err)
				}
				users = append(users, u)
			}
		}
		if i >= len(toks) {
			return nil, fmt.Errorf("%s: entry not ended with ';'", module)
		}
		i++
	}
	return users, nil
}

func unquoteJAAS(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
		v = strings.ReplaceAll(v, `\"`, `"`)
		v = strings.ReplaceAll(v, `\\`, `\`)
	}
	return v
}
