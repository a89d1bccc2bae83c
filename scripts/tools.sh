#!/usr/bin/env bash
# Installs the project's pinned build tools into bin/tools/ (git-ignored) with `go install`
# from the Go module proxy. They are not added to go.mod. An install is skipped when
# bin/tools/<tool> --version already reports the pinned version.
#
#   scripts/tools.sh                 # all tools
#   scripts/tools.sh golangci-lint   # one tool
#   TOOLS_DIR=/elsewhere scripts/tools.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned versions. goreleaser v2.15.1 is the newest that builds with the project's Go;
# newer releases need a newer toolchain.
GOLANGCI_LINT_VERSION=v2.15.0
GORELEASER_VERSION=v2.15.1

GO=${GO:-go}
TOOLS_DIR=${TOOLS_DIR:-$PWD/bin/tools}
mkdir -p "$TOOLS_DIR"
# go install wants an absolute GOBIN; make passes a relative one.
TOOLS_DIR=$(cd "$TOOLS_DIR" && pwd)

# install NAME PACKAGE VERSION: NAME is the binary go install writes for PACKAGE.
install() {
	local name=$1 pkg=$2 version=$3 bin="$TOOLS_DIR/$1"
	# Both tools print the bare version (without the v) in their --version output.
	local re="(^|[^0-9.])v?${version#v}([^0-9.]|\$)"
	re=${re//./\\.}
	if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -Eq "$re"; then
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

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(golangci-lint goreleaser)
for t in "${want[@]}"; do
	case $t in
	golangci-lint) install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION" ;;
	goreleaser) install goreleaser github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION" ;;
	*) echo "tools: unknown tool $t (known: golangci-lint goreleaser)" >&2; exit 2 ;;
	esac
done
