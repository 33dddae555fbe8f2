#!/bin/sh
# backup.sh: one snapshot of the etcd cluster holding etdi's pin store,
# checked, and the oldest ones pruned (docs/etcd.md, "Backup").
#
# Usage: deploy/etcd/backup.sh DIR
#
# Writes DIR/etdi-pins-YYYYmmddTHHMMSSZ.db from ONE member (etcdctl takes a
# snapshot from a single endpoint), checks it with etcdutl snapshot status,
# and keeps the newest KEEP snapshots.
#
# Environment:
#   ENDPOINT           the member to read, host:port [first of ETCDCTL_ENDPOINTS]
#   ETCDCTL, ETCDUTL   the binaries [etcdctl, etcdutl]
#   KEEP               snapshots kept in DIR [48: two days of hourly ones]
#   ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY (or ETCDCTL_USER): credentials
#                      of root, as for roles.sh: a snapshot holds every key
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
dir=$1
keep=${KEEP:-48}
case $keep in '' | *[!0-9]* | 0) echo "backup.sh: KEEP must be a positive number" >&2; exit 2 ;; esac
endpoint=${ENDPOINT:-${ETCDCTL_ENDPOINTS:-}}
endpoint=${endpoint%%,*}
if [ -z "$endpoint" ]; then
	echo "backup.sh: set ENDPOINT (host:port of one member) or ETCDCTL_ENDPOINTS" >&2
	exit 2
fi

mkdir -p "$dir"
name="$dir/etdi-pins-$(date -u +%Y%m%dT%H%M%SZ).db"
# etcdctl refuses a flag that its environment also sets: pass the one
# endpoint through the environment.
ETCDCTL_ENDPOINTS=$endpoint "${ETCDCTL:-etcdctl}" snapshot save "$name.part" >/dev/null
"${ETCDUTL:-etcdutl}" snapshot status "$name.part" -w table
mv "$name.part" "$name"
echo "saved $name"

# Prune: the names sort by time, and so does the glob.
set -- "$dir"/etdi-pins-*.db
excess=$(($# - keep))
for f in "$@"; do
	[ "$excess" -gt 0 ] || break
	rm -f "$f"
	echo "removed $f"
	excess=$((excess - 1))
done
