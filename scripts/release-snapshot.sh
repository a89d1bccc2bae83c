#!/usr/bin/env bash
# Builds a local snapshot release with the pinned goreleaser, publishing nothing:
# binaries, archives, deb/rpm packages, checksums (and the Homebrew cask) in dist/, and the
# container image in the local image store: docker's with docker buildx, else podman's
# (through scripts/docker-podman/docker; `scripts/tools.sh podman` installs podman).
#
#   scripts/release-snapshot.sh        # every platform (linux, darwin, windows x amd64, arm64)
#   scripts/release-snapshot.sh --ci   # linux/amd64 only, no cask: what CI runs (minutes, not 10+)
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER=${GORELEASER:-bin/tools/goreleaser}

skip=publish
if [[ ${1:-} == --ci || -n ${KOP_OFFSETS_RELEASE_CI:-} ]]; then
	export KOP_OFFSETS_RELEASE_CI=1 # .goreleaser.yml: build kop-offsets-ci instead of kop-offsets
	skip=publish,homebrew           # the cask needs the darwin archives
fi

# goreleaser reads the commit, its date and the remote URL together: in a repository
# without a remote it drops all three and stamps "none" and year 1. Lend it one, for its
# own git calls only (nothing is written to .git/config).
if [[ -z $(git remote) ]]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
		GIT_CONFIG_VALUE_0=https://github.com/kop-offsets/kop-offsets.git
fi

# The image: docker buildx where it works, else podman in its place.
if ! docker buildx version >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
	command -v podman >/dev/null || {
		echo "release-snapshot: the image needs docker with buildx, or podman (scripts/tools.sh podman)" >&2
		exit 1
	}
	echo "release-snapshot: no docker buildx here: podman builds the image"
	PATH=$PWD/scripts/docker-podman:$PATH
fi

start=$SECONDS
"$GORELEASER" release --snapshot --clean --skip="$skip"
echo "release-snapshot: done in $((SECONDS - start))s; dist/:"
ls dist
