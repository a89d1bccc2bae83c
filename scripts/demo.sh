#!/usr/bin/env bash
# make demo: the user's story on the built-in lab, narrated for a person.
# Needs bin/kop-offsets and bin/kop-lab (make build). Starts the lab if it is not running and
# leaves it running, so the commands printed at the end can be tried by hand.
# With KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<v>.nar the lab runs KoP and the whole
# story is told: STALE_CACHE on wus, repair, a consumer resuming at 10900. Without it, the
# persisted half.
set -uo pipefail
cd "$(dirname "$0")/.."

KO=bin/kop-offsets
LAB=bin/kop-lab
CFG=lab/run/config.yaml

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
# A running healthy lab is reused; otherwise start over fresh data (docs/lab.md: a restart over
# old data can loop on the bookie registration).
fresh=--fresh
$LAB status >/dev/null 2>&1 && fresh=
$LAB up $fresh || { echo "the lab did not start: see the error above and lab/run/*/logs/broker.log" >&2; exit 1; }
$LAB status | sed -n '2,4p'
kop=off
$LAB status 2>/dev/null | grep -q '^KoP on' && kop=on

# A fresh lab tells the story with the user's names; a reused one with names of this run, so
# that the offsets are the story's.
if [ -n "$fresh" ]; then
  GROUP=${DEMO_GROUP:-G}; TOPIC=${DEMO_TOPIC:-topic-1}
else
  run_id=$(date +%s)
  GROUP=${DEMO_GROUP:-G-$run_id}; TOPIC=${DEMO_TOPIC:-topic-$run_id}
fi

if [ "$kop" = on ]; then
  say "Two real Apache Pulsar standalone clusters on 127.0.0.1 with KoP, replicating public/default and public/__kafka both ways. Every Kafka client below is real (franz-go) and talks to KoP's Kafka ports (scus 19092, wus 29092)."

  bold "2. $TOPIC gets 10900 records on scus"
  run $LAB produce --cluster scus --topic "$TOPIC" --count 10900

  bold "3. Group $GROUP commits offset 500 on scus; wus loads it"
  run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 500
  wait_replicated && say "replicated to wus (replication backlog 0)."
  say "wus's broker takes the bundle that holds $GROUP's offsets partition (here: unloaded and looked up): KoP on wus reads the partition and caches 500."
  run $LAB refresh --cluster wus --group "$GROUP"
  run $KO --config "$CFG" check --group "$GROUP" --topic "$TOPIC"

  bold "4. $GROUP consumes to the end on scus and commits 10900"
  run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 10900
  wait_replicated && say "replicated to wus as well: its offsets topic holds 10900."

  bold "5. check: wus still serves 500"
  say "KoP on wus answers OffsetFetch from the cache it filled at step 3; its own topic holds 10900. That row is STALE_CACHE (exit 1), with the command that fixes it:"
  run $KO --config "$CFG" check --group "$GROUP" --topic "$TOPIC"

  bold "6. repair: reload exactly the stale bundle on wus, then check again"
  run $KO --config "$CFG" repair --cluster wus --yes

  bold "7. check is clean"
  run $KO --config "$CFG" check --group "$GROUP" --topic "$TOPIC"

  bold "8. A consumer of $GROUP on wus starts at 10900"
  say "One more record on wus (offset 10900), then a franz-go consumer joins $GROUP on wus:"
  run $LAB produce --cluster wus --topic "$TOPIC" --count 1
  run $LAB consume --cluster wus --group "$GROUP" --topic "$TOPIC"

  bold "9. A second repair does nothing"
  run $KO --config "$CFG" repair --cluster wus --yes

  bold "10. doctor: what geo-replicated offsets depend on"
  run $KO --config "$CFG" doctor
else
  say "KoP is off: no KoP NAR was given, so nothing answers on the Kafka ports and only the persisted half can be shown. To see the whole story, bring a NAR: KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<v>.nar make demo (docs/lab.md)."

  bold "2. Group $GROUP commits offset 500 of $TOPIC on scus"
  say "Written by 'kop-lab commit' byte for byte as KoP writes it; replication, decoding and the bundle mapping below are real."
  run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 500
  wait_replicated && say "replicated to wus (replication backlog 0)."

  bold "3. $GROUP consumes to the end on scus and commits 10900"
  run $LAB commit --cluster scus --group "$GROUP" --topic "$TOPIC" --offset 10900
  wait_replicated && say "replicated to wus as well."

  bold "4. What the offsets topic holds on both clusters (decoded as KoP's loader reads it)"
  run $KO --config "$CFG" dump --group "$GROUP" --topic "$TOPIC" --kind offset_commit -o table
  run $KO --config "$CFG" dump --group "$GROUP" --topic "$TOPIC" --compacted -o table

  bold "5. Where KoP keeps $GROUP: offsets partition, bundle, owner broker"
  run $KO --config "$CFG" locate "$GROUP"

  bold "6. check, persisted side: both clusters hold 10900"
  run $KO --config "$CFG" check --persisted-only --source scus --group "$GROUP" --topic "$TOPIC"

  bold "7. The lever: reload wus's bundle of public/__kafka (plan only)"
  run $KO --config "$CFG" --cluster wus reload --group "$GROUP" --dry-run

  bold "8. doctor: what geo-replicated offsets depend on"
  run $KO --config "$CFG" doctor
fi

bold "Try it yourself"
cat <<EOT
  $KO --config $CFG config check
  $KO --config $CFG dump --group $GROUP -o table
  $KO --config $CFG locate $GROUP
  $KO --config $CFG check --group $GROUP
  $KO --config $CFG --cluster wus reload --group $GROUP --dry-run
  $KO --config $CFG repair --cluster wus --dry-run
  $KO --config $CFG doctor
EOT
if [ "$kop" = on ]; then
cat <<EOT
  # make wus stale again (it has the partition loaded), then look:
  $LAB commit --cluster scus --group $GROUP --topic $TOPIC --offset 10901
  $KO --config $CFG check --group $GROUP
  $LAB consume --cluster wus --group $GROUP --topic $TOPIC
EOT
fi
cat <<EOT
  $LAB status          # pids, memory, ports, KoP and its NAR
  make lab-down        # stop both clusters
EOT
