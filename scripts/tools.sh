#!/usr/bin/env bash
# Installs the project's pinned build tools into bin/tools/ (git-ignored) with `go install`
# from the Go module proxy. They are not added to go.mod. An install is skipped when
# bin/tools/<tool> --version already reports the pinned version. The deployment checks'
# tools (make deploy-ci) come from Debian's packages instead: promtool is taken out of the
# prometheus package (not installed: that would add a Prometheus service), podman is
# installed (apt-get, as root).
#
#   scripts/tools.sh                 # golangci-lint and goreleaser
#   scripts/tools.sh golangci-lint   # one tool
#   scripts/tools.sh helm promtool podman   # what make deploy-ci needs
#   TOOLS_DIR=/elsewhere scripts/tools.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned versions. goreleaser v2.15.1 is the newest that builds with the project's Go;
# newer releases need a newer toolchain.
GOLANGCI_LINT_VERSION=v2.15.0
GORELEASER_VERSION=v2.15.1
HELM_VERSION=v3.22.0

GO=${GO:-go}
TOOLS_DIR=${TOOLS_DIR:-$PWD/bin/tools}
mkdir -p "$TOOLS_DIR"
# go install wants an absolute GOBIN; make passes a relative one.
TOOLS_DIR=$(cd "$TOOLS_DIR" && pwd)

# install NAME PACKAGE VERSION: NAME is the binary go install writes for PACKAGE. The
# version installed is read from the binary's build information (go version -m): helm, for
# one, prints only its minor version.
install() {
	local name=$1 pkg=$2 version=$3 bin="$TOOLS_DIR/$1"
	if [[ -x $bin ]] && [[ $("$GO" version -m "$bin" 2>/dev/null | awk '$1 == "mod" {print $3}') == "$version" ]]; then
		echo "tools: $name $version already installed ($bin)"
		return
	fi
	echo "tools: installing $name $version into $TOOLS_DIR ..."
	local start=$SECONDS
	# GOFLAGS=-mod=mod would not matter (pkg@version ignores the main module), but a
	# caller's -mod=vendor would break it.
	GOBIN=$TOOLS_DIR GOFLAGS=-buildvcs=false GOTOOLCHAIN=${GOTOOLCHAIN:-local} \
		"$GO" install "$pkg@$version"
	echo "tools: $name $version installed in $((SECONDS - start))s"
}

# apt_ready: Debian's package lists, fetched once per run (a fresh machine has none).
apt_ready() {
	[[ -n ${apt_updated:-} ]] && return
	command -v apt-get >/dev/null || { echo "tools: no apt-get here: install $1 by hand" >&2; exit 1; }
	apt-get update -qq || { echo "tools: apt-get update failed (root and Debian's mirror needed)" >&2; exit 1; }
	apt_updated=1
}

# promtool: Debian's prometheus package carries it as a static binary; only that file is
# extracted into $TOOLS_DIR.
install_promtool() {
	local bin="$TOOLS_DIR/promtool"
	if [[ -x $bin ]] && "$bin" --version >/dev/null 2>&1; then
		echo "tools: promtool already installed ($bin)"
		return
	fi
	echo "tools: extracting promtool from Debian's prometheus package into $TOOLS_DIR ..."
	local start=$SECONDS tmp
	apt_ready promtool
	tmp=$(mktemp -d)
	chmod 755 "$tmp" # apt-get download fetches as user _apt
	(cd "$tmp" && apt-get download -qq prometheus) || { rm -rf "$tmp"; echo "tools: apt-get download prometheus failed" >&2; exit 1; }
	dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -xO ./usr/bin/promtool >"$bin.tmp"
	rm -rf "$tmp"
	chmod +x "$bin.tmp" && mv "$bin.tmp" "$bin"
	echo "tools: $("$bin" --version 2>&1 | head -1) installed in $((SECONDS - start))s"
}

# podman builds the container image where docker has no buildx (scripts/docker-podman/).
install_podman() {
	if command -v podman >/dev/null; then
		echo "tools: podman already installed ($(command -v podman))"
		return
	fi
	echo "tools: installing podman (apt-get) ..."
	local start=$SECONDS
	apt_ready podman
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman >/dev/null ||
		{ echo "tools: apt-get install podman failed (root needed)" >&2; exit 1; }
	echo "tools: podman $(podman --version | awk '{print $3}') installed in $((SECONDS - start))s"
}

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(golangci-lint goreleaser)
for t in "${want[@]}"; do
	case $t in
	golangci-lint) install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION" ;;
	goreleaser) install goreleaser github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION" ;;
	helm) install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
	promtool) install_promtool ;;
	podman) install_podman ;;
	*) echo "tools: unknown tool $t (known: golangci-lint goreleaser helm promtool podman)" >&2; exit 2 ;;
	esac
done
