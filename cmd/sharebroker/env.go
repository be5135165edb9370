package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Environment variables configure the broker where flags are awkward (a
// container): SHAREBROKER_<FLAG> for each flag, the flag's name upper-cased
// with dashes as underscores (SHAREBROKER_LISTEN, SHAREBROKER_ENABLE_TEST_API),
// and SHAREBROKER_CONFIG_<PROPERTY> for each Kafka property, the property's
// name upper-cased with dots as underscores
// (SHAREBROKER_CONFIG_NUM_PARTITIONS=3 is --config num.partitions=3).
// A flag on the command line wins over its variable; a --config wins over
// the variable of the same property. Variables that name no flag are
// ignored; an unknown property fails at start like --config does.
// SHAREBROKER_SASL_USERS=alice:pw,bob:pw is --sasl-user once per
// comma-separated item, so a container sets every user in one variable
// (a password holding a comma needs the flag).
const (
	envPrefix       = "SHAREBROKER_"
	envConfigPrefix = "SHAREBROKER_CONFIG_"
	envSASLUsers    = "SHAREBROKER_SASL_USERS"
	saslUserFlag    = "sasl-user"
)

// envFlagName is the variable that sets flag name.
func envFlagName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// envPropertyName is the Kafka property a SHAREBROKER_CONFIG_ variable sets.
func envPropertyName(variable string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(variable, envConfigPrefix), "_", "."))
}

// applyEnv sets cmd's flags that the command line left alone from environ
// (os.Environ form: KEY=VALUE).
func applyEnv(cmd *cobra.Command, environ []string) error {
	fs := cmd.Flags()
	// Setting a flag from a variable marks it changed too: remember what
	// the command line set before any variable does.
	usersOnCommandLine := fs.Changed(saslUserFlag)
	vars := make(map[string]string)
	var props []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, envPrefix) {
			continue
		}
		if strings.HasPrefix(k, envConfigPrefix) && len(k) > len(envConfigPrefix) {
			props = append(props, envPropertyName(k)+"="+v)
			continue
		}
		vars[k] = v
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		v, ok := vars[envFlagName(f.Name)]
		if !ok || f.Changed || err != nil || f.Name == "config" || f.Name == "help" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s=%q: %v", envFlagName(f.Name), v, e)
		}
	})
	if err != nil {
		return err
	}
	if users, ok := vars[envSASLUsers]; ok && !usersOnCommandLine {
		if fs.Lookup(saslUserFlag) != nil {
			for item := range strings.SplitSeq(users, ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				if err := fs.Set(saslUserFlag, item); err != nil {
					return fmt.Errorf("%s: %v", envSASLUsers, err)
				}
			}
		}
	}
	cf := fs.Lookup("config")
	if cf == nil || len(props) == 0 {
		return nil
	}
	sort.Strings(props) // a stable order for a property set twice (differently cased)
	slice := cf.Value.(pflag.SliceValue)
	// The variables go first, so a --config of the same property wins.
	return slice.Replace(append(props, slice.GetSlice()...))
}

func applyOSEnv(cmd *cobra.Command, _ []string) error { return applyEnv(cmd, os.Environ()) }
