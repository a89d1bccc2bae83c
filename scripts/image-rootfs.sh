#!/usr/bin/env bash
# Writes build/image-rootfs.tar, the container image's files besides the binary
# (deploy/image/Dockerfile ADDs it; goreleaser runs this as a before hook):
#   etc/passwd, etc/group              root and nonroot (65532), from deploy/image/
#   etc/ssl/certs/ca-certificates.crt  the build host's CA bundle ($CA_BUNDLE), for TLS
#   tmp/                               mode 1777: repair's lock file, as in any image
# Owned by root, dated EPOCH (goreleaser passes the commit time), sorted: reproducible.
#
#   scripts/image-rootfs.sh [EPOCH]
set -euo pipefail
cd "$(dirname "$0")/.."
epoch=${1:-${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[[ -s $ca ]] || { echo "image-rootfs: no CA bundle at $ca (Debian: apt-get install ca-certificates; or set CA_BUNDLE)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/ssl/certs" "$root/tmp"
install -m 0644 deploy/image/passwd "$root/etc/passwd"
install -m 0644 deploy/image/group "$root/etc/group"
install -m 0644 "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
chmod 0755 "$root/etc" "$root/etc/ssl" "$root/etc/ssl/certs"
chmod 1777 "$root/tmp"

mkdir -p build
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
	-C "$root" -cf build/image-rootfs.tar etc tmp
echo "image-rootfs: build/image-rootfs.tar ($(tar -tf build/image-rootfs.tar | wc -l) entries)"
