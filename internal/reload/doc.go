// Package reload invalidates and reloads KoP's group-metadata cache of one cluster through
// the Pulsar admin API, and proves the result with OffsetFetch.
//
// The lever (docs/reload.md, ../shared/design/domain.md): KoP reads an offsets partition
// only when its broker takes ownership of the namespace bundle that holds it. A single-topic
// unload clears the partition's groups but does not load them again, so reload unloads the
// bundle, makes a broker take it again with a lookup of each offsets partition in it, and
// waits until KoP answers OffsetFetch for every affected group with the values the offsets
// topic now holds.
//
// Two steps, both without cobra and without stdout:
//   - Planner.Plan builds a Plan: groups or offsets partitions -> bundles -> every
//     offsets partition of those bundles -> every group persisted in them (the blast
//     radius) -> which of those groups have live members on this cluster and on the others.
//   - Executor.Execute carries out the bundles of a plan one by one and returns an
//     Execution: what was unloaded, loaded and verified, and per group the cached offsets
//     before and after.
//
// Everything remote goes through small interfaces (BundleAdmin, GroupDescriber,
// OffsetFetcher, loader.OffsetTopicReader) so that tests use fakes and kfake.
package reload
