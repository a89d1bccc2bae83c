// Package watch is the engine of `kop-offsets watch`: one long-running process that keeps,
// for every configured cluster, the loader view of the offsets topic up to date
// incrementally, asks KoP (OffsetFetch) about the groups that changed, classifies them with
// the classifier `check` uses (verdict.ClassifyDrift), measures how long KoP takes to serve
// commits that arrived by geo-replication, and optionally reloads stale bundles under a
// policy.
//
// The cost of a cycle grows with what arrived since the last one, not with the topic:
//   - each offsets partition is read once from the earliest message by a non-durable reader
//     that then stays open (Tailer, pulsarx.Reader.Tail): a Replayer per partition is fed
//     the new messages as they arrive;
//   - a cycle asks KoP only about the groups touched since the last cycle (plus the groups
//     still stale or with replicated commits KoP does not serve yet); every Resync all
//     groups are asked again.
//
// Everything remote is behind interfaces (Tailer, survey.OffsetFetcher,
// survey.ReplicationSource, Reloader, reload.GroupDescriber) so that tests run on fakes.
// Nothing here prints or knows about cobra: decisions go to a slog.Logger, numbers to
// Prometheus collectors (Metrics).
//
// The types, by job: follower (follow.go) reads the offsets topics; exporter (cycle.go,
// fetch.go, staleness.go) runs a cycle and asks the remote sides what it needs; rowBook
// (rows.go, report.go, forget.go) classifies, publishes the report and drops what belongs
// to groups gone; fleet (fleet.go) is the clusters as a whole; Metrics and Handler publish.
// The jobs beside the exporter are packages of their own behind job.Job (jobs.go wires
// them): syncjob (--sync), keepjob (--keep-translations), repairjob (--repair). Each owns
// its metrics and log lines; a cycle tells each what it learnt (job.Cycle) and switches on
// no mode.
package watch
