// Package shared holds what several commands share, so that no command package imports
// another (cli/cli's pkg/cmd/pr/shared): the per-cluster clients and the check's sources
// (check, groups, repair, watch), the admin client and the cluster-name check, the reload
// session with its writer lease and audit trail, and RunPlan, which shows, confirms and
// executes a reload plan (reload, repair, watch, failover).
package shared
