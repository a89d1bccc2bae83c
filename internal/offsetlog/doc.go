// Package offsetlog is the wire format of KoP's __consumer_offsets topic: record batches
// (every codec), the key and value schemas of every version, Decode into Records, the
// zero-allocation Stream a replay reads through, and the decode errors. It knows nothing of
// what KoP does with the records (package loader).
package offsetlog
