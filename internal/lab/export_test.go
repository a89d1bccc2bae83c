//go:build e2e || topology

package lab

// The lab's own e2e and topology tests are package lab_test (they start the lab with labrun,
// which imports the lab); these are the unexported helpers they use.
var (
	PortInUse    = portInUse
	SameSet      = sameSet
	IsLabProcess = isLabProcess
	FileSHA256   = fileSHA256
)
