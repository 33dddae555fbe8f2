#!/usr/bin/env bash
# Builds etdi from the action's own source (GITHUB_ACTION_PATH, the ref the
# workflow named in "uses:"), puts it on the PATH of the following steps and
# in ETDI_BIN. A key given as a KMS URI gets the build with the KMS providers.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

case ${INPUT_COMMAND:-} in
sign | check) ;;
*) die "input command must be sign or check, not '${INPUT_COMMAND:-}'" ;;
esac
src=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}
bindir=${RUNNER_TEMP:?RUNNER_TEMP is not set}/etdi-bin
mkdir -p "$bindir"
exe=$(go env GOEXE)

tags=
case ${INPUT_KEY:-} in
env://*) ;;
*://*) tags=kms ;;
esac
# A release tag (v1.2.3) becomes the version etdi reports; a branch or a
# commit leaves "dev".
version=dev
ref=${ETDI_ACTION_REF:-}
if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	version=$ref
fi

echo "Building etdi ${version} from ${src}${tags:+ with -tags $tags}"
(
	cd "$src"
	# The workflow's own Go settings (a vendor directory, a go.work) are not
	# etdi's.
	export GOFLAGS=-mod=readonly GOWORK=off
	go build -tags "$tags" -ldflags "-s -w -X main.version=$version" -o "$bindir/etdi$exe" ./cmd/etdi
)
printf '%s\n' "$bindir" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
set_env ETDI_BIN "$bindir/etdi$exe"
"$bindir/etdi$exe" version
