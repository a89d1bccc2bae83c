// Package pulsarx is the Pulsar access layer of kop-offsets: a non-durable reader of KoP's
// offsets topic (Reader) and a typed wrapper over the Pulsar admin REST API (Admin).
//
// It never prints and never creates durable subscriptions. Writing calls (UnloadBundle,
// UnloadTopic, and LookupOwner, which makes a broker take ownership of the bundle) are named
// as such in their comments; everything else only reads.
package pulsarx
