#!/usr/bin/env bash
# etdi sign for the action: keyless (Sigstore: a Fulcio certificate for the
# job's OIDC identity, recorded in Rekor) unless a key is given. With
# server-json and bundle-url, etdi sign records the bundle's URL and digest
# in the server.json (after checking that it agrees with the manifest).
#
# Keyless signing in GitHub Actions needs the workflow (or job) permission
# "id-token: write": etdi then requests the job's OIDC token itself from
# ACTIONS_ID_TOKEN_REQUEST_URL with ACTIONS_ID_TOKEN_REQUEST_TOKEN (audience
# "sigstore"). With a key, the key's password comes from ETDI_PASSWORD in
# the step's environment (set it from a secret).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

manifest=${INPUT_MANIFEST:-}
[ -n "$manifest" ] || die "input manifest is required for command sign"
[ -f "$manifest" ] || die "manifest '$manifest' does not exist"
bundle=${INPUT_BUNDLE:-}
if [ -z "$bundle" ]; then
	case $manifest in
	*.manifest.json) bundle=${manifest%.manifest.json}.etdi.json ;;
	*) bundle=$manifest.etdi.json ;;
	esac
fi
[ "$bundle" != - ] || die "input bundle must be a file, not '-'"

etdi_args=(sign)
if [ -n "${INPUT_KEY:-}" ]; then
	for v in INPUT_IDENTITY_TOKEN INPUT_FULCIO_URL INPUT_REKOR_URL; do
		[ -z "${!v:-}" ] || die "input $(printf '%s' "${v#INPUT_}" | tr 'A-Z_' 'a-z-') is for keyless signing and cannot be combined with key"
	done
	etdi_args+=("--key=$INPUT_KEY")
else
	if [ -z "${INPUT_IDENTITY_TOKEN:-}" ] && { [ -z "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ] || [ -z "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-}" ]; }; then
		die "keyless signing needs the job's OIDC token: give the workflow 'permissions: id-token: write' (or pass identity-token, or sign with a key)"
	fi
	etdi_args+=(--keyless)
	[ -z "${INPUT_IDENTITY_TOKEN:-}" ] || etdi_args+=("--identity-token=$INPUT_IDENTITY_TOKEN")
	[ -z "${INPUT_FULCIO_URL:-}" ] || etdi_args+=("--fulcio-url=$INPUT_FULCIO_URL")
	[ -z "${INPUT_REKOR_URL:-}" ] || etdi_args+=("--rekor-url=$INPUT_REKOR_URL")
fi
[ -z "${INPUT_EXPIRES:-}" ] || etdi_args+=("--expires=$INPUT_EXPIRES")
[ -z "${INPUT_SEQUENCE:-}" ] || etdi_args+=("--sequence=$INPUT_SEQUENCE")
server_json=${INPUT_SERVER_JSON:-}
if [ -n "$server_json" ] || [ -n "${INPUT_BUNDLE_URL:-}" ]; then
	[ -n "$server_json" ] && [ -n "${INPUT_BUNDLE_URL:-}" ] || die "inputs server-json and bundle-url go together: the bundle's URL is recorded in the server.json"
	[ -f "$server_json" ] || die "server.json '$server_json' does not exist"
	etdi_args+=("--server-json=$server_json" "--bundle-url=$INPUT_BUNDLE_URL")
fi
add_lines INPUT_ARGS
etdi_args+=("--out=$bundle" -- "$manifest")

mkdir -p -- "$(dirname -- "$bundle")"
run_etdi "${etdi_args[@]}" </dev/null || die "etdi sign failed (exit $?)"
[ -s "$bundle" ] || die "etdi sign wrote no bundle to '$bundle'"

digest=sha256:$(sha256_file "$bundle")
set_output bundle "$bundle"
set_output digest "$digest"
summary "### etdi sign"
summary ""
summary "Signed $(code "$manifest") into $(code "$bundle") ($(code "$digest"))."
if [ -n "$server_json" ]; then
	set_output server-json "$server_json"
	summary ""
	summary "Recorded the bundle in $(code "$server_json") (publish the bundle at $(code "$INPUT_BUNDLE_URL"), then run mcp-publisher publish)."
fi
