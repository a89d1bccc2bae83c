#!/usr/bin/env bash
# Checks the container image of the last snapshot (make release-snapshot, or release-ci):
# exports it from podman's store as an OCI layout into dist/image/, then the Go tests of
# deploy/image_test.go open that layout (entrypoint, user, files, no shell) and run its
# binary. Podman cannot run containers in every sandbox; the tests need no runtime.
#
#   scripts/image-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

[[ -f dist/artifacts.json ]] || { echo "image-check: no dist/artifacts.json: run make release-snapshot first" >&2; exit 2; }
img=$(grep -o '"name":"[^"]*"[^{}]*"type":"Docker Image[^"]*"' dist/artifacts.json | head -1 | sed 's/^"name":"\([^"]*\)".*/\1/' || true)
[[ -n $img ]] || { echo "image-check: goreleaser built no image (dist/artifacts.json)" >&2; exit 1; }
version=$(grep -o '"version":"[^"]*"' dist/metadata.json | head -1 | cut -d'"' -f4 || true)
command -v podman >/dev/null || { echo "image-check: no podman (scripts/tools.sh podman)" >&2; exit 1; }

start=$SECONDS
rm -rf dist/image
podman save --quiet --format oci-dir -o dist/image "$img"
echo "image-check: $img ($version) exported to dist/image in $((SECONDS - start))s"

KOP_OFFSETS_IMAGE_LAYOUT=$PWD/dist/image KOP_OFFSETS_IMAGE_VERSION=$version \
	"$GO" test -tags deploy -count=1 -run '^TestImage' ./deploy/
echo "image-check: done in $((SECONDS - start))s"
