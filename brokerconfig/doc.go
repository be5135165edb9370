// Package brokerconfig is the broker's configuration: the property table
// (every broker, topic and GROUP property the broker honours, gathered
// from the configdef declarations here and in package group), the check
// of the settings given at start and their defaults (Resolve: addresses,
// named listeners, nodes, data directory, --config properties), the
// resolved values with typed accessors (Props), the group coordinators'
// configurations made from them, and topic-config validation and
// effective topic settings.
//
// What a Kafka request makes of it (DescribeConfigs entries with their
// sources and synonyms, AlterConfigs answers) is translation, and stays in
// package broker. This package imports neither kmsg nor wire
// (imports_test.go); of net it uses only the address functions.
package brokerconfig
