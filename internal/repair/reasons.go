package repair

import "github.com/kop-offsets/kop-offsets/internal/verdict"

// LeaveReason says why repair does not reload a row with status s (empty for stale_cache
// and ok).
func LeaveReason(s verdict.Status) string {
	switch s {
	case verdict.StatusOK, verdict.StatusStaleCache:
		return ""
	case verdict.StatusReplicationLag:
		return "the offsets topic here is behind and its replicator still has a backlog: a reload would load the same old value; wait for replication"
	case verdict.StatusDiverged:
		return "the offsets topics disagree durably: a reload only loads what this cluster's topic holds; fix the persisted offsets instead"
	case verdict.StatusMissing:
		return "absent on one side: there is no cached value to refresh"
	case verdict.StatusMisaligned:
		return "the replicated offset names another message on this cluster: a reload would serve it and consumers would skip or re-read messages; refused (failover lands on the translated offset)"
	case verdict.StatusCoordinatorUnavailable:
		return "KoP did not answer for the group: not proven stale"
	case verdict.StatusError:
		return "the row could not be checked"
	case verdict.StatusUnloadable:
		return "KoP cannot load this offsets partition (a record it cannot parse): a reload would leave every group of it with no offset; remove the record first (docs/kop-facts.md)"
	case verdict.StatusCacheAhead:
		return "KoP serves a newer offset than its loader would load (for example a transactional commit): a reload would lose it"
	case verdict.StatusExpired:
		return "the offset is past its expiry: KoP drops it; a reload would not keep it; commit again"
	case verdict.StatusExpiring:
		return ""
	case verdict.StatusAhead:
		return "past the translation of the group's newest own commit (sync or kept deployment): a reload loads the same number, and a consumer moved here would skip messages; the tool that follows (watch --sync, --keep-translations) moves it back, or reset the group here"
	case verdict.StatusSyncLag:
		return "behind the translation of the group's newest own commit for longer than the grace: a reload loads the same number; the tool that follows (watch --sync, --keep-translations) is not doing it"
	case verdict.StatusOverwritten:
		return "KoP would load a kept translation that hides a newer commit: a reload would serve the older value; watch --keep-translations writes the newer one again"
	default:
		return "status " + string(s) + " is not one repair fixes"
	}
}
