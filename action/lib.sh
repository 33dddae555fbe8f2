# Helpers shared by the action's scripts. Sourced, never run.
#
# Every input reaches the scripts as an environment variable that action.yml
# sets explicitly (INPUT_...); the scripts only ever use such values as
# quoted words, so a value such as "$(...)" is data, never code.

# escape_data TEXT: TEXT made safe inside a workflow command message
# (%, CR and LF are encoded, so a value cannot start a command of its own).
escape_data() {
	local s=$1
	s=${s//'%'/'%25'}
	s=${s//$'\r'/'%0D'}
	s=${s//$'\n'/'%0A'}
	printf '%s' "$s"
}

# die MESSAGE: an error annotation, then exit 1.
die() {
	printf '::error title=etdi::%s\n' "$(escape_data "$*")"
	exit 1
}

# random_token: 32 hex digits from the system's random source.
random_token() {
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
}

# append_kv FILE NAME VALUE: NAME=VALUE in the multiline-safe form the
# runner reads from GITHUB_OUTPUT and GITHUB_ENV: NAME<<DELIMITER, the value,
# DELIMITER, with a fresh random delimiter that the value does not contain.
append_kv() {
	local file=$1 name=$2 value=$3 delim
	case $name in
	'' | *[!A-Za-z0-9_-]*) die "invalid output name '$name'" ;;
	esac
	delim="ETDI_EOF_$(random_token)"
	case $value in
	*"$delim"*) die "the value of $name contains its delimiter" ;;
	esac
	printf '%s<<%s\n%s\n%s\n' "$name" "$delim" "$value" "$delim" >>"$file"
}

set_output() {
	append_kv "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: not running in GitHub Actions}" "$1" "$2"
}

set_env() {
	append_kv "${GITHUB_ENV:?GITHUB_ENV is not set: not running in GitHub Actions}" "$1" "$2"
}

# summary MARKDOWN: appends a line to the job summary, when there is one.
summary() {
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		printf '%s\n' "$*" >>"$GITHUB_STEP_SUMMARY"
	fi
}

# code TEXT: TEXT as a Markdown code span (backticks and line breaks dropped).
code() {
	local s=$1
	s=${s//'`'/}
	s=${s//$'\n'/ }
	s=${s//$'\r'/ }
	# shellcheck disable=SC2016 # the backticks are Markdown
	printf '`%s`' "$s"
}

# is_true VALUE: the action's boolean inputs are "true" or "false".
is_true() {
	case $1 in
	true | True | TRUE) return 0 ;;
	false | False | FALSE | '') return 1 ;;
	esac
	die "expected true or false, not '$1'"
}

# add_lines NAME: appends each non-empty line of the variable NAME's value
# to the array etdi_args, one argument per line, trimmed of a trailing CR.
add_lines() {
	local line
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%$'\r'}
		if [ -n "$line" ]; then
			etdi_args+=("$line")
		fi
	done <<<"${!1:-}"
}

# run_etdi [--stdout FILE] ARGS...: runs etdi (its standard output into
# FILE) with workflow commands turned off, so that no line it prints (a
# tool description from a server, say) is taken for a workflow command.
run_etdi() {
	local token status=0 out=
	if [ "$1" = --stdout ]; then
		out=$2
		shift 2
	fi
	token=$(random_token)
	printf '::stop-commands::%s\n' "$token"
	if [ -n "$out" ]; then
		"${ETDI_BIN:-etdi}" "$@" >"$out" || status=$?
	else
		"${ETDI_BIN:-etdi}" "$@" || status=$?
	fi
	printf '::%s::\n' "$token"
	return "$status"
}

# sha256_file FILE: the hex SHA-256 of FILE.
sha256_file() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum <"$1" | cut -d" " -f1
	else
		shasum -a 256 <"$1" | cut -d" " -f1
	fi
}

# meaning CODE: what an etdi exit code means (SPEC.md §11).
meaning() {
	case $1 in
	0) echo "ok" ;;
	1) echo "error" ;;
	2) echo "usage error" ;;
	10) echo "missing or invalid signature" ;;
	11) echo "rug pull or downgrade" ;;
	12) echo "impersonation" ;;
	13) echo "approval required" ;;
	14) echo "revoked or expired" ;;
	*) echo "exit $1" ;;
	esac
}
