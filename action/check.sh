#!/usr/bin/env bash
# etdi check for the action: writes the findings as SARIF and reports the
# exit code as an output, without failing, so that the SARIF is uploaded
# before gate.sh fails the job on it. Only a run that produced no SARIF (a
# usage error, say) fails here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

etdi_args=(check --sarif)
[ -z "${INPUT_TRUST:-}" ] || etdi_args+=("--trust=$INPUT_TRUST")
[ -z "${INPUT_PINS:-}" ] || etdi_args+=("--pins=$INPUT_PINS")
[ -z "${INPUT_BUNDLE:-}" ] || etdi_args+=("--bundle=$INPUT_BUNDLE")
[ -z "${INPUT_TOOLS:-}" ] || etdi_args+=("--tools=$INPUT_TOOLS")
[ -z "${INPUT_CONFIG:-}" ] || etdi_args+=("--config=$INPUT_CONFIG")
# Further arguments, one per line, last: "--server", "--", "node", "server.js".
add_lines INPUT_ARGS
if [ ${#etdi_args[@]} -eq 2 ]; then
	die "command check needs what to check: input tools, config or args (for example --url URL)"
fi

sarif=${INPUT_SARIF:-}
[ -n "$sarif" ] || sarif=${RUNNER_TEMP:?RUNNER_TEMP is not set}/etdi.sarif
[ "$sarif" != - ] || die "input sarif must be a file, not '-'"
mkdir -p -- "$(dirname -- "$sarif")"
tmp=$sarif.partial
status=0
run_etdi --stdout "$tmp" "${etdi_args[@]}" </dev/null || status=$?

# A run that checked something prints SARIF whatever it found.
results=$(jq -r 'if .version == "2.1.0" then [.runs[].results[]] | length else error("not SARIF 2.1.0") end' <"$tmp" 2>/dev/null) || results=
case $results in
'' | *[!0-9]*)
	rm -f -- "$tmp"
	die "etdi check exited $status without SARIF output"
	;;
esac
mv -f -- "$tmp" "$sarif"

set_output sarif "$sarif"
set_output findings "$results"
set_output exit-code "$status"
summary "### etdi check"
summary ""
summary "Exit code $status ($(meaning "$status")), $results finding(s); SARIF in $(code "$sarif")."
