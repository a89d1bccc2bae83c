// Package share holds only an e2e test: a second test package that calls labrun.Ensure, to
// prove that packages of one `go test` run share a single lab start (whichever package starts
// it, the others reuse it, and the reaper stops it after the run unless it is kept).
package share
