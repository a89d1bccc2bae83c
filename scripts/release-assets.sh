#!/usr/bin/env bash
# Generates what the release archives and packages ship besides the binary, from the
# command tree itself (goreleaser runs it as a before hook; `make release-assets` too):
#   completions/kop-offsets.{bash,zsh,fish}   shell completion scripts
#   manpages/kop-offsets*.1.gz                one man page per command
# Both directories are git-ignored.
#
#   scripts/release-assets.sh [VERSION [EPOCH]]
#
# VERSION goes into the man pages' header; EPOCH (Unix seconds; goreleaser passes the
# commit time) dates them, default $SOURCE_DATE_EPOCH, else the last commit's time, so the
# pages are reproducible.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}
epoch=${2:-${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}}
export SOURCE_DATE_EPOCH=$epoch
GO=${GO:-go}

rm -rf completions manpages
mkdir -p completions manpages

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/kop-offsets" ./cmd/kop-offsets
for shell in bash zsh fish; do
	"$tmp/kop-offsets" completion "$shell" > "completions/kop-offsets.$shell"
done

"$GO" run ./cmd/docgen -markdown "" -man manpages -version "$version"
gzip -9n manpages/*.1

echo "release-assets: $(ls completions | wc -l) completion scripts, $(ls manpages | wc -l) man pages"
