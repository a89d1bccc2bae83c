// Package kop is the KoP suite (make e2e-kop): the user's story and the KoP facts the
// project relies on, shown on the lab running a real KoP with real Kafka clients (franz-go)
// through KoP's Kafka ports and the kop-offsets commands run in-process. Its tests build only
// with the tag kop; they need a KoP NAR (KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<v>.nar,
// docs/lab.md) and fail at once, naming KOP_NAR, without one.
package kop
