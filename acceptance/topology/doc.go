// Package topology holds the lab suite for several brokers per cluster (build tag
// topology): doctor, locate and reload against a lab started with more than one broker per
// cluster and KoP on each. It has no code of its own; see topology_test.go for how to run it.
package topology
