#!/bin/sh
# roles.sh: the etcd roles and users of etdi's pin store under PREFIX, then
# etcd authentication on (docs/etcd.md). Run it once per cluster as root;
# running it again is harmless.
#
# Usage: deploy/etcd/roles.sh PREFIX [MACHINE...]
#
#   PREFIX is the path of the store's URL without its leading slash:
#   --pins etcd://HOST:PORT,.../etdi has PREFIX etdi, and every key of the
#   store starts with "etdi/".
#   Each MACHINE (its $ETDI_MACHINE, 1-64 letters, digits, . _ -) gets a
#   user and role etdi-client-MACHINE of its own, which writes that
#   machine's spool only: machines that must not speak for each other.
#
# etcdctl finds the cluster through its own environment, for example:
#   ETCDCTL_ENDPOINTS=127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379
#   ETCDCTL_CACERT=certs/ca.pem
#   ETCDCTL_CERT=certs/root.pem ETCDCTL_KEY=certs/root-key.pem
#   (or ETCDCTL_USER=root:PASSWORD once auth is on and root has a password)
#
# Other environment:
#   ETCDCTL            the etcdctl command [etcdctl]; it is split on spaces, so
#                      "docker compose exec -T etcd1 etcdctl" works
#   ROOT_PASSWORD      a password for root; without it root has none and only
#                      its client certificate (common name root) authenticates it
#   CLIENT_PASSWORD    the same for the user etdi-client
#   APPROVER_PASSWORD  the same for the user etdi-approver
#   (passwords are given to etcdctl on its standard input, never as an
#   argument; etcdctl reads them up to the first space)
#
# Roles:
#   etdi-client    read the whole store; write only the spools
#                  (PREFIX/spools/): the findings and call records of
#                  `etdi check`, `etdi run` and the gate wait there until an
#                  approver's next transaction appends them to the history.
#                  Never the history (PREFIX/log/) nor PREFIX/meta/.
#   etdi-client-MACHINE  the same, writing PREFIX/spools/MACHINE/ only
#                  (a user without password: its client certificate, or
#                  etcdctl user passwd)
#   etdi-approver  read and write the whole store: approve, revoke, and
#                  append what clients spooled
#   root           etcd's superuser (role root), for operators only
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 PREFIX [MACHINE...]   (e.g. $0 etdi for --pins etcd://HOST:PORT/etdi)" >&2
	exit 2
fi
prefix=${1#/}
shift
for m in "$@"; do
	case $m in
	'' | . | .. | *[!A-Za-z0-9._-]*) echo "roles.sh: machine name '$m': 1-64 letters, digits and . _ - only" >&2; exit 2 ;;
	esac
	if [ ${#m} -gt 64 ]; then
		echo "roles.sh: machine name '$m' is longer than 64 bytes" >&2
		exit 2
	fi
done
while [ "${prefix%/}" != "$prefix" ]; do
	prefix=${prefix%/}
done
case $prefix in
'') echo "roles.sh: empty PREFIX: the roles would cover every key of the cluster" >&2; exit 2 ;;
*[!A-Za-z0-9._/-]* | */../* | ../* | */.. | ..) echo "roles.sh: PREFIX may hold letters, digits and . _ - / only" >&2; exit 2 ;;
esac
p="$prefix/"

# --- Key layout: SPEC.md §29.2 and §29.5 --------------------------------------
# The pin database's buckets under PREFIX (docs/etcd.md has the table). What
# the client role may write: the spools (spools/<machine>/<entry>), never
# the history (log/) nor meta/ (SPEC.md §29.5).
client_write_prefixes="spools/"
# What older versions of this script granted the client role; taken back.
client_revoked_prefixes="log/"
client_revoked_keys="meta/logSize"
# ------------------------------------------------------------------------------

etcdctl_cmd=${ETCDCTL:-etcdctl}
ctl() {
	# shellcheck disable=SC2086 # ETCDCTL is a command line, split on purpose
	$etcdctl_cmd "$@"
}

add_role() {
	if ctl role get "$1" >/dev/null 2>&1; then
		echo "role $1 exists"
	else
		ctl role add "$1"
	fi
}

# add_user NAME PASSWORD ROLE
add_user() {
	if ctl user get "$1" >/dev/null 2>&1; then
		echo "user $1 exists"
	elif [ -n "$2" ]; then
		printf '%s\n' "$2" | ctl user add "$1" --interactive=false
	else
		ctl user add "$1" --no-password
	fi
	ctl user grant-role "$1" "$3"
}

add_role etdi-client
ctl role grant-permission etdi-client read "$p" --prefix=true
for w in $client_write_prefixes; do
	ctl role grant-permission etdi-client write "$p$w" --prefix=true
done
for w in $client_revoked_prefixes; do
	ctl role revoke-permission etdi-client "$p$w" --prefix=true >/dev/null 2>&1 || true
done
for w in $client_revoked_keys; do
	ctl role revoke-permission etdi-client "$p$w" >/dev/null 2>&1 || true
done

for m in "$@"; do
	add_role "etdi-client-$m"
	ctl role grant-permission "etdi-client-$m" read "$p" --prefix=true
	ctl role grant-permission "etdi-client-$m" write "${p}spools/$m/" --prefix=true
done

add_role etdi-approver
ctl role grant-permission etdi-approver readwrite "$p" --prefix=true

add_user root "${ROOT_PASSWORD:-}" root
add_user etdi-client "${CLIENT_PASSWORD:-}" etdi-client
add_user etdi-approver "${APPROVER_PASSWORD:-}" etdi-approver
for m in "$@"; do
	add_user "etdi-client-$m" "" "etdi-client-$m"
done

ctl auth enable
# With auth on, etcd wants a user: root's client certificate, or, without
# one, root's password (from the environment, never an argument).
if [ -n "${ROOT_PASSWORD:-}" ] && [ -z "${ETCDCTL_USER:-}" ] && [ -z "${ETCDCTL_CERT:-}" ]; then
	ETCDCTL_USER=root:$ROOT_PASSWORD
	export ETCDCTL_USER
fi
ctl role get etdi-client
ctl role get etdi-approver
