#!/usr/bin/env bash
# Smoke-tests a built kop-offsets binary the way an operator first meets it: version,
# --help, an offline decode of a real offsets-topic message, a usage error's exit code.
#
#   scripts/smoke.sh [BINARY]
#
# BINARY defaults to the host's build in dist/ from `goreleaser release --snapshot`
# (make release-snapshot). EXPECT_VERSION, when set, must be the version it reports.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-}
if [[ -z $bin ]]; then
	os=$(go env GOOS) arch=$(go env GOARCH)
	# dist/kop-offsets_linux_amd64_v1/ (every platform) or dist/kop-offsets-ci_linux_amd64_v1/
	bin=$(ls -d dist/kop-offsets*_"${os}"_"${arch}"*/kop-offsets 2>/dev/null | head -1 || true)
	[[ -n $bin ]] || { echo "smoke: no dist/kop-offsets*_${os}_${arch}*/kop-offsets: run make release-snapshot first" >&2; exit 2; }
fi
[[ -x $bin ]] || { echo "smoke: $bin is not an executable" >&2; exit 2; }

failures=0 passed=0
pass() { echo "  ok    $1"; passed=$((passed + 1)); }
fail() { echo "  FAIL  $1"; failures=$((failures + 1)); }

# run NAME WANT_EXIT CMD...: runs CMD with no config and no terminal, keeps out/err/code.
run() {
	local name=$1 want=$2
	shift 2
	set +e
	out=$(env -u KOP_OFFSETS_CONFIG XDG_CONFIG_HOME="$tmp" "$@" 2>"$tmp/err" </dev/null)
	code=$?
	set -e
	err=$(cat "$tmp/err")
	if [[ $code -ne $want ]]; then
		fail "$name: exit $code, want $want"
		printf '%s\n%s\n' "$out" "$err" | sed 's/^/        /' | head -20
		return 1
	fi
}
# expect NAME TEXT PATTERN: PATTERN (fixed string) must occur in TEXT.
expect() {
	if grep -qF -- "$3" <<<"$2"; then pass "$1"; else
		fail "$1: no $3 in:"
		sed 's/^/        /' <<<"$2" | head -20
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "smoke: $bin"

if run "version" 0 "$bin" version; then
	expect "version prints the name and version" "$out" "kop-offsets version "
	if [[ $out == "kop-offsets version dev"* ]]; then fail "version is stamped (got: $out)"; else pass "version is stamped"; fi
	expect "version has a commit" "$out" "commit "
	[[ -z ${EXPECT_VERSION:-} ]] || expect "version is $EXPECT_VERSION" "$out" "version ${EXPECT_VERSION#v}"
fi
if run "version -o json" 0 "$bin" version -o json; then
	expect "version -o json" "$out" '"version":'
fi

if run "--help" 0 "$bin" --help; then
	expect "--help has a usage line" "$out" "Usage:"
	for c in decode version completion config; do
		expect "--help lists $c" "$out" "  $c "
	done
fi

key=$(tr -d '\n' <scripts/testdata/offset-commit.key.b64)
value=$(tr -d '\n' <scripts/testdata/offset-commit.value.b64)
if run "decode --key --value" 0 "$bin" decode --key "$key" --value "$value" -o ndjson; then
	for want in '"kind":"offset_commit"' '"group":"orders-consumer"' \
		'"topic":"persistent://public/default/orders"' '"partition":3' '"offset":10900' \
		'"leaderEpoch":7' '"commitTimestamp":"2023-11-14T22:13:20.042Z"' '"line":1'; do
		expect "decode: $want" "$out" "$want"
	done
	[[ $(wc -l <<<"$out") -eq 1 ]] && pass "decode: one record" || fail "decode: want one record, got: $out"
fi

if run "decode without a message is a usage error" 2 "$bin" decode; then
	pass "decode without a message exits 2"
fi

if run "completion bash" 0 "$bin" completion bash; then
	expect "completion bash" "$out" "kop-offsets"
fi

# The host's archive and Debian package, when this is a snapshot's binary.
dir=$(dirname "$bin")
if [[ $dir == dist/* ]]; then
	os=$(go env GOOS) arch=$(go env GOARCH)
	archive=$(ls dist/kop-offsets_*_"${os}"_"${arch}".tar.gz 2>/dev/null | head -1 || true)
	if [[ -n $archive ]]; then
		list=$(tar tzf "$archive")
		for f in kop-offsets LICENSE README.md completions/kop-offsets.bash completions/kop-offsets.zsh \
			completions/kop-offsets.fish manpages/kop-offsets.1.gz manpages/kop-offsets-decode.1.gz; do
			expect "$(basename "$archive") has $f" "$list" "$f"
		done
	fi
	deb=$(ls dist/kop-offsets_*_"${arch}".deb 2>/dev/null | head -1 || true)
	if [[ -n $deb ]] && command -v dpkg-deb >/dev/null; then
		list=$(dpkg-deb -c "$deb")
		for f in ./usr/bin/kop-offsets ./usr/share/bash-completion/completions/kop-offsets \
			./usr/share/zsh/vendor-completions/_kop-offsets ./usr/share/fish/vendor_completions.d/kop-offsets.fish \
			./usr/share/man/man1/kop-offsets.1.gz; do
			expect "$(basename "$deb") has $f" "$list" "$f"
		done
	fi
fi

echo "smoke: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
