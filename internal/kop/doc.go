// Package kop is the KoP side of kop-offsets: every Kafka call to KoP (Fetcher: offset
// fetch in batches, groups, end offsets; KafkaGroups: reload's describe and fetch-all of one
// group; Committer: sync's OffsetCommit and OffsetDelete through KoP's front door) and the
// commit writer that writes offsets in KoP's own format (Writer, Encode*).
package kop
