#!/usr/bin/env bash
# make e2e-kop: the KoP suite (acceptance/kop, build tag kop) on the lab with a real KoP.
# Needs KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<v>.nar (docs/lab.md), or a NAR already
# in lab/run/protocols/; without one it fails at once, before building anything.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

if [ -z "${KOP_NAR:-}" ] && ! ls lab/run/protocols/pulsar-protocol-handler-kafka-*.nar >/dev/null 2>&1; then
  cat >&2 <<'MSG'
e2e-kop: FAILED: the KoP suite needs KoP, and no KoP NAR was given.
  Bring a KoP protocol handler NAR built for the lab's Pulsar (4.0.8 unless PULSAR_VERSION):
    KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<version>.nar make e2e-kop
  docs/lab.md says where to get one (KoP's release artifacts, or a build from its public source
  outside this repository).
MSG
  exit 2
fi
if [ -n "${KOP_NAR:-}" ] && [ ! -f "$KOP_NAR" ]; then
  echo "e2e-kop: FAILED: KOP_NAR=$KOP_NAR is not a file" >&2
  exit 2
fi

export KOP=${KOP:-required}
mkdir -p lab/run
log=lab/run/e2e-kop.log
start=$(date +%s)
set +e
$GO test -count=1 -tags kop -timeout 60m -p 1 -v ./acceptance/kop/ 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
pass=$(grep -c '^--- PASS' "$log" || true)
fail=$(grep -c '^--- FAIL' "$log" || true)
echo
echo "e2e-kop: $pass passed, $fail failed, exit $rc, $(( $(date +%s) - start ))s wall (log $log)"
grep '^kop suite:' "$log" || true
exit "$rc"
