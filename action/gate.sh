#!/usr/bin/env bash
# Ends the check with etdi's exit code, after the SARIF upload, unless
# fail-on-findings is false.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

status=${ETDI_EXIT_CODE:-}
case $status in
'' | *[!0-9]*) die "the check step reported no exit code" ;;
esac
if [ "$status" -eq 0 ]; then
	echo "etdi check: ok"
	exit 0
fi
msg="etdi check exited $status: $(meaning "$status"); ${ETDI_FINDINGS:-0} finding(s)"
if is_true "${INPUT_FAIL_ON_FINDINGS:-true}"; then
	printf '::error title=etdi check::%s\n' "$(escape_data "$msg")"
	exit "$status"
fi
printf '::warning title=etdi check::%s\n' "$(escape_data "$msg (not failing: fail-on-findings is false)")"
