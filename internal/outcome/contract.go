package outcome

import (
	"fmt"
	"slices"
	"strings"
)

// The exit-code contract as data: what each code means in every command, and which
// situations of which command end with which code. The root's and every command's --help
// ("Exit codes:") and docs/cli/kop-offsets_exit-codes.md (linked from README) are generated from
// it; each row names the test that provokes its situation (TestContractTestsExist checks
// that the test exists).

// Meaning is what one code means in every command.
type Meaning struct {
	Outcome Outcome
	Text    string
}

// Meanings is one meaning per code, the same in every command.
var Meanings = []Meaning{
	{OK, "done; nothing found that needs attention"},
	{Found, "the run worked and found something: drift, an error finding, rows left after the run"},
	{Usage, "not run as asked and nothing written: a usage or configuration error (found before anything is contacted where it can be), an input file that cannot be read, or a confirmation declined"},
	{Unreachable, "a cluster, endpoint or lock could not be used: not reachable, answered with errors, or held by another process; what could be done is still printed"},
	{WriteFailed, "a write was refused by the tool's safety rules or did not achieve its goal; under --dry-run, the real run would be refused"},
	{Reread, "done, and some rows landed on an older position than the newest: their consumers re-read messages they had consumed (each row says how much); nothing was skipped or left"},
}

// Situation is one row of the contract: Command (its path after "kop-offsets", "*" for
// every command) in situation When ends with Outcome. Test is the test that provokes it:
// "package/dir:TestName" (a subtest after a slash), relative to the module root.
type Situation struct {
	Command string
	When    string
	Outcome Outcome
	Test    string
}

// Contract is every command's situations, by command, then code.
var Contract = []Situation{
	{"*", "--help; a command group (config, sync) without a subcommand", OK, "internal/commands:TestExitCodes/group_without_subcommand"},
	{"*", "an unknown command, subcommand, help topic or flag; a bad flag value or argument; --timeout not positive", Usage, "internal/commands:TestExitCodes/unknown_subcommand"},
	{"*", "the configuration cannot be found or is invalid, a secret cannot be resolved or reads <redacted> (copied from config view), --cluster names no configured cluster", Usage, "internal/commands:TestExitCodes/unknown_cluster"},
	{"*", "--tenant matches no tenant of the selected clusters; a command that works on one tenant at a time (dump, locate, reload, failover, watch) given several (a multi-tenant config: select one with --tenant)", Usage, "internal/commands/factory:TestClustersOfOneTenant"},
	{"*", "tenants: auto and no cluster's tenants could be listed (each cluster is named; a cluster whose tenants cannot be listed beside others that can is a warning)", Unreachable, "internal/commands/factory:TestAutoTenantsUnlistable"},

	{"check", "nothing found that --fail-on names (default: every status but ok and expiring)", OK, "internal/commands/check:TestCheckExitCodes/fail-on_names_nothing_found"},
	{"check", "drift found (a status --fail-on names; by default ahead, sync_lag and overwritten too: a cluster of a sync or kept deployment that does not follow the group's newest own commit, or loads a kept translation that hides a newer commit), or offsets partitions KoP does not serve", Found, "internal/commands/check:TestCheckExitCodes/drift"},
	{"check", "--source is not among the selected clusters; --prometheus-file cannot be written (checked before anything is contacted)", Usage, "internal/commands/check:TestPrometheusTextfileUnwritable"},
	{"check", "a cluster or endpoint could not be reached or answered with errors: its cells are marked error and the other clusters are still checked (one KoP broker of several down marks only the groups it coordinates, and a group it coordinates has no row when the offsets topic cannot be read either: warnings names it); --prometheus-file could not be written after the survey and the survey's code is 3; no cluster could be read at all (the summary says so, naming each; unread in JSON)", Unreachable, "internal/commands/check:TestCheckExitCodes/cluster_down_wins"},

	{"config check", "every configured endpoint answered", OK, "internal/commands:TestConfigCheckEndpoints"},
	{"config check", "an endpoint failed (each is named with its kind: admin, pulsar, kafka, its cause and its fix; a refused port fails at once)", Unreachable, "internal/commands:TestConfigCheckRefusedFast"},
	{"config view", "the effective configuration printed", OK, "internal/commands:TestExitCodes/config_from_env"},

	{"decode", "done", OK, "internal/commands/decode:TestDecodeInputFile"},
	{"decode", "--strict and some records were undecodable", Found, "internal/commands/decode:TestDecodeStrict"},
	{"decode", "an unreadable --input file, or a malformed input line (the error names the line; records of earlier lines were already written)", Usage, "internal/commands/decode:TestDecodeMalformedInput"},

	{"doctor", "no error finding (warnings and info may be present)", OK, "internal/commands/doctor:TestDoctorRunHealthy"},
	{"doctor", "an error finding (a broker that names itself otherwise than the config, too; groups-follow: groups ahead of their newest own commit on a cluster)", Found, "internal/commands/doctor:TestDoctorRunLabGolden"},
	{"doctor", "a cluster's admin API could not be reached, answered with errors, or is not a Pulsar admin API (http 404) (what could be checked is still printed; a broker that does not answer at its own address is a warning, not 3)", Unreachable, "internal/commands:TestDoctorNotAnAdminAPI"},

	{"dump", "done", OK, "internal/commands/dump:TestDumpAll"},
	{"dump", "--strict and some records were undecodable", Found, "internal/commands/dump:TestDumpStrictAndUnreachable"},
	{"dump", "--partition beyond the offsets topic's partition count", Usage, "internal/commands/dump:TestDumpPartitionOutOfRange"},
	{"dump", "a cluster could not be read: its error is printed, the other clusters are still dumped", Unreachable, "internal/commands/dump:TestDumpStrictAndUnreachable"},

	{"failover", "every selected row served at its translated offset; nothing to do; a dry run that would refuse nothing", OK, "internal/commands/failover:TestFailoverDryRunRefusesNothing"},
	{"failover", "the operator declined, or stdin could not be read; --from equals --to; the audit trail cannot be written (nothing written)", Usage, "internal/commands/failover:TestBeforeWriteStopsFailover"},
	{"failover", "a cluster could not be reached; the writer lease is held elsewhere (nothing written)", Unreachable, "internal/commands/failover:TestBeforeWriteStopsFailover"},
	{"failover", "rows refused by the plan (also under --dry-run); the reload would be refused (nothing written); a record could not be written; the target does not serve the translated offset afterwards", WriteFailed, "internal/failover:TestApply"},
	{"failover", "--source-gone: every row landed on the kept translation of the source's newest commit, or was the group's own commit there already", OK, "internal/failover:TestApplySourceGone/all_kept"},
	{"failover", "--source-gone: every row landed, some on a position that re-reads (an older kept translation, the group's own commit, the earliest position; each row names it and how much)", Reread, "internal/failover:TestApplySourceGone/some_re-read"},
	{"failover", "--source-gone: rows left, each with its reason (KoP keeps serving what it served for them); the other rows, those of the same bundles included, landed", Found, "internal/failover:TestApplySourceGone/some_left"},
	{"failover", "the source did not answer within --timeout and --source-gone was neither given nor confirmed at the prompt (nothing written; the error names the flag)", Unreachable, "internal/commands/failover:TestSourceNotAnswering"},

	{"groups", "listed", OK, "internal/commands/groups:TestGroupsExitCodes/listed"},
	{"groups", "a cluster or endpoint could not be reached (what could be read is still listed)", Unreachable, "internal/commands/groups:TestGroupsExitCodes/a_cluster_down"},

	{"history", "shown (possibly nothing; also when the default trail does not exist yet)", OK, "internal/commands/history:TestHistoryWithoutTrail"},
	{"history", "the trail cannot be read: a --file that does not exist, a directory, a malformed line", Usage, "internal/commands/history:TestHistoryNamedTrailMissing"},

	{"locate", "every row answered (also when a broker did not answer but no row needed it: see the warning)", OK, "internal/commands/locate:TestLocateOnline"},
	{"locate", "a row is not answered: a cluster could not be asked, a bundle's owner is unknown, or its bundles disagree with the broker (the row says why)", Unreachable, "internal/commands/locate:TestLocateBundleMismatchAndUnreachable"},

	{"reload", "reloaded and verified; a --dry-run whose real run would go ahead; nothing stale or unserved in --from-check", OK, "internal/commands/reload:TestFromCheck"},
	{"reload", "no --yes without a terminal; the operator declined; the audit trail cannot be written; --from-check missing or malformed; --partition beyond the partition count (nothing written)", Usage, "internal/commands/reload:TestExitCodes/unknown_partition:_2"},
	{"reload", "an endpoint failed (what was done is reported, the cache is not proven fresh); the writer lease is held elsewhere (nothing written); --from-check holds a check that could not reach every endpoint and nothing stale for the cluster", Unreachable, "internal/commands/reload:TestFromCheckIncompleteAndUnserved"},
	{"reload", "the plan was refused (groups live or of unknown activity with --refuse-live, offsets a reload would lose, more bundles than --max-bundles), also under --dry-run; the cache still differs after --wait", WriteFailed, "internal/commands/reload:TestExitCodes/--dry-run_of_a_run_that_would_be_refused:_4,_says_so"},

	{"repair", "nothing stale or unserved, or everything it may fix fixed (the second check agrees); a --dry-run whose plans would go ahead", OK, "internal/commands/repair:TestRepairFixesOnlyStaleAndIsIdempotent"},
	{"repair", "rows remain (beyond --max-bundles, or still there after the reload), or misaligned rows were left alone (failover translates them)", Found, "internal/commands/repair:TestRepairBringsBackUnservedPartitions"},
	{"repair", "no --yes without a terminal; the operator declined; the audit trail cannot be written; a broker that names itself otherwise than the config", Usage, "internal/commands/repair:TestRepairFirstCheckErrors"},
	{"repair", "a peer (a cluster it does not write to, outside --cluster: a region gone) could not be read at all and the clusters written to are right: the peer is asked once, within --timeout (the plans and the second check do not ask it again), and named on stderr and in peersUnread (JSON); stale_cache and unserved are judged on each cluster alone", OK, "internal/commands/repair:TestRepairPeerDownAskedOnce/only_the_peer_is_down:_0"},
	{"repair", "an endpoint of a cluster it writes to failed (a cluster the first check could not read is named with the cause, unread in JSON: nothing is repaired there), or a peer answered with errors while readable; another repair holds the host lock (a --dry-run takes no lock); a cluster's writer lease is held elsewhere", Unreachable, "internal/commands/repair:TestRepairLock"},
	{"repair", "a cluster's plan was refused (also under --dry-run); the cache still differs after --wait", WriteFailed, "internal/commands/repair:TestRepairRefusedExit4"},

	{"sync setup", "set up, verified and seeded; nothing to do; a dry run; another process syncs (the seed is left to it)", OK, "internal/commands/synccmd:TestSetupAndUndo"},
	{"sync setup", "the operator declined, or stdin could not be read; fewer than two clusters; a cluster without kafkaBootstrap (nothing written)", Usage, "internal/commands/synccmd:TestSetupDeclined"},
	{"sync setup", "a cluster could not be reached (nothing is written when one could not be read)", Unreachable, "internal/commands/synccmd:TestSetupRefusesAnUnreadableCluster"},
	{"sync setup", "a write failed or did not take within --verify; groups left unsynced by the seed (named; watch --sync takes them up)", WriteFailed, "internal/commands/synccmd:TestSetupNotVerified"},

	{"watch", "stopped by SIGINT or SIGTERM", OK, "internal/commands/watch:TestWatchRunServesAndStopsOnSignal"},
	{"watch", "--sync while the offsets topic replicates between the synced clusters (the refusal prints the fix)", Found, "internal/commands:TestWatchSyncRefusedWhileReplicated"},
	{"watch", "a flag of a mode that is off (--cooldown without --repair); --listen cannot be bound; --sync with fewer than two clusters or a cluster without kafkaBootstrap; the audit trail cannot be written", Usage, "internal/commands:TestExitCodes/repair-only_flag_without_--repair"},
	{"watch", "the HTTP server failed; --sync and where a cluster's offsets topic replicates could not be read (nothing synced)", Unreachable, "internal/commands/watch:TestWatchRunHTTPServerFails"},
}

// Of returns command's situations (its own, not "*"), by code.
func Of(command string) []Situation {
	var out []Situation
	for _, s := range Contract {
		if s.Command == command {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Situation) int { return int(a.Outcome) - int(b.Outcome) })
	return out
}

// Commands returns the commands the contract has rows for, "*" first.
func Commands() []string {
	var out []string
	for _, s := range Contract {
		if !slices.Contains(out, s.Command) {
			out = append(out, s.Command)
		}
	}
	return out
}

// Help is the "Exit codes:" section of command's --help: its situations by code, with the
// meaning of 2 where it names none (every command can be misused). The root (command "")
// gets every code's meaning.
func Help(command string) string {
	rows := Of(command)
	if command == "" {
		rows = nil
		for _, m := range Meanings {
			rows = append(rows, Situation{Outcome: m.Outcome, When: m.Text})
		}
	}
	named := map[Outcome]bool{}
	for _, s := range rows {
		named[s.Outcome] = true
	}
	if m, _ := meaning(Usage); !named[Usage] {
		rows = append(rows, Situation{Outcome: Usage, When: m.Text})
	}
	slices.SortStableFunc(rows, func(a, b Situation) int { return int(a.Outcome) - int(b.Outcome) })
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, s := range rows {
		b.WriteString(wrap(fmt.Sprintf("  %d  %s", s.Outcome, s.When)))
	}
	b.WriteString("\nOne meaning per code in every command: 'kop-offsets --help', docs/cli/kop-offsets_exit-codes.md.")
	return b.String()
}

// helpWidth is where help lines wrap, as the hand-written help does.
const helpWidth = 92

// wrap breaks line at helpWidth, the continuation lines indented under the text after the
// code, and ends it with a newline.
func wrap(line string) string {
	const indent = "     "
	var b strings.Builder
	width := 0
	for i, w := range strings.Fields(line[5:]) {
		switch {
		case i == 0:
			b.WriteString(line[:5] + w)
			width = 5 + len(w)
		case width+1+len(w) > helpWidth:
			b.WriteString("\n" + indent + w)
			width = len(indent) + len(w)
		default:
			b.WriteString(" " + w)
			width += 1 + len(w)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// meaning is o's entry of Meanings.
func meaning(o Outcome) (Meaning, bool) {
	for _, m := range Meanings {
		if m.Outcome == o {
			return m, true
		}
	}
	return Meaning{}, false
}

// MeaningsMarkdown is the table of what each code means, the head of the exit-codes page.
func MeaningsMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, m := range Meanings {
		fmt.Fprintf(&b, "| %d | %s |\n", m.Outcome, m.Text)
	}
	return b.String()
}

// Markdown is the whole contract: the meanings, then every command's situations.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Exit codes\n\nOne meaning per code, the same in every command:\n\n")
	b.WriteString(MeaningsMarkdown())
	b.WriteString("\nBy command (`*`: every command), the situation that ends with each code:\n\n| command | code | situation |\n|---|---|---|\n")
	for _, c := range Commands() {
		rows := Of(c)
		for _, s := range rows {
			name := "`" + c + "`"
			fmt.Fprintf(&b, "| %s | %d | %s |\n", name, s.Outcome, strings.ReplaceAll(s.When, "|", `\|`))
		}
	}
	b.WriteString("\nA run of several steps ends with the most severe code of its steps: 3, then 4, then 2, then 1, then 5, then 0.\n")
	return b.String()
}
