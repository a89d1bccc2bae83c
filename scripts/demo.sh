#!/usr/bin/env bash
# make demo: the user's story on the built-in lab, narrated for a person.
# Needs bin/kop-offsets and bin/kop-lab (make build). Starts the lab if it is not running and
# leaves it running, so the commands printed at the end can be tried by hand.
set -uo pipefail
cd "$(dirname "$0")/.."

KO=bin/kop-offsets
LAB=bin/kop-lab
CFG=lab/run/config.yaml
GROUP=${DEMO_GROUP:-G}
TOPIC=${DEMO_TOPIC:-topic-1}

bold() { if [ -t 1 ]; then printf '\n\033[1m== %s\033[0m\n' "$*"; else printf '\n== %s\n' "$*"; fi; }
say() { printf '%s\n' "$*" | fold -s -w 100; }
run() { printf '\n$ %s\n' "$*"; "$@"; rc=$?; printf '(exit %d)\n' "$rc"; return 0; }

# wait_replicated waits until wus's offsets topic holds what scus's holds for the group
# (check --persisted-only --source scus exits 0 once no row lags).
wait_replicated() {
  for _ in $(seq 1 60); do
    if $KO --config "$CFG" check --persisted-only --source scus --group "$GROUP" --topic "$TOPIC" -o json >/dev/null 2>&1; then
      return 0
    fi
    sleep 1
  done
  echo "replication of $GROUP did not finish within 60s" >&2
  return 1
}

bold "1. The lab: two geo-replicated Pulsar clusters, scus and wus"
say "Two real Apache Pulsar 4.0.8 standalone clusters on 127.0.0.1, replicating public/default and public/__kafka both ways (docs/lab.md)."
# A running healthy lab is reused; otherwise start over fresh data (docs/lab.md: a restart over
# old data can loop on the bookie registration).
fresh=--fresh
$LAB status >/dev/null 2>&1 && fresh=
$LAB up $fresh || { echo "the lab did not start: see the error above and lab/run/*/logs/broker.log" >&2; exit 1; }
$LAB status | sed -n '1,3p'
say ""
say "KoP itself could not be fetched on this machine (its NAR is not served by the Maven mirror), so nothing answers on the Kafka ports and the cached side cannot be shown. What KoP writes into the offsets topic is written here by 'kop-lab commit', byte for byte in KoP's format: the persisted side, replication, decoding and the bundle mapping below are real."

bold "2. Group $GROUP commits offset 500 of $TOPIC on scus"
run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 500
wait_replicated && say "replicated to wus (replication backlog 0)."
say "On a KoP cluster, wus loads this partition when its broker takes the bundle: from then on it serves 500 for $GROUP."

bold "3. $GROUP consumes to the end on scus and commits 10900"
run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 10900
wait_replicated && say "replicated to wus as well."

bold "4. What the offsets topic holds on both clusters (decoded as KoP's loader reads it)"
run $KO --config "$CFG" dump --group "$GROUP" --topic "$TOPIC" --kind offset_commit -o table
run $KO --config "$CFG" dump --group "$GROUP" --topic "$TOPIC" --compacted -o table

bold "5. Where KoP keeps $GROUP: offsets partition, bundle, owner broker"
run $KO --config "$CFG" locate "$GROUP"

bold "6. check: cached (what KoP serves) against persisted (what the topic holds)"
say "Persisted side only: both clusters hold 10900, so replication did its job."
run $KO --config "$CFG" check --persisted-only --source scus --group "$GROUP" --topic "$TOPIC"
say "Both sides: with KoP, wus would answer OffsetFetch from the cache it filled at step 2 (500), while its topic holds 10900. That row is STALE_CACHE, exit 1, with the reload command as a hint. Without KoP the cached column reads ERROR and check exits 3, naming the Kafka listener it could not reach:"
run $KO --config "$CFG" check --group "$GROUP" --topic "$TOPIC"

bold "7. The lever: reload wus's bundle of public/__kafka (plan only)"
say "reload unloads the bundle that holds $GROUP's offsets partition and makes a broker take it again, so KoP reads the partition afresh. --dry-run shows the plan and the blast radius and changes nothing:"
run $KO --config "$CFG" --cluster wus reload --group "$GROUP" --dry-run

bold "8. doctor: what geo-replicated offsets depend on"
run $KO --config "$CFG" doctor

bold "Try it yourself"
cat <<EOT
  $KO --config $CFG config check
  $KO --config $CFG dump --group $GROUP -o table
  $KO --config $CFG locate $GROUP
  $KO --config $CFG check --group $GROUP
  $KO --config $CFG --cluster wus reload --group $GROUP --dry-run
  $KO --config $CFG doctor
  $LAB status          # pids, memory, ports
  make lab-down        # stop both clusters
EOT
