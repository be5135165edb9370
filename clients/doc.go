// Package clients tests sharebroker with the Kafka clients applications use,
// unmodified: each test starts a broker in process and drives a real client
// library (or a client's command-line tool) against it, asserting exactly
// what the client produced, read, committed or was told.
//
// The package holds tests only.
package clients
