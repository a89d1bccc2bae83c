package verdict

// GroupFetch is KoP's answer for one group, as the verdict reads it (package kop asks KoP
// and answers with this type).
type GroupFetch struct {
	// Offsets by topic (as KoP answered it) and partition; partitions KoP answered with -1
	// are absent.
	Offsets map[string]map[int32]int64
	// Unavailable: KoP kept answering "loading" / "not coordinator" for the retry window.
	Unavailable bool
	// Err: another failure for this group (Unavailable is false).
	Err error
}
