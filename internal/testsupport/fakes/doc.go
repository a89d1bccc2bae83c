// Package fakes holds in-memory stand-ins for the interfaces the domain reads and acts
// through, shared by every package's tests: an offsets-topic reader, copies of data topics,
// a Pulsar admin and a KoP (the Kafka side). Import it only from _test files.
package fakes
