#!/bin/sh
# local-cluster.sh: three etcd v3.6 members on one machine, with TLS for
# clients and peers, set up for etdi's pin store (docs/etcd.md). For a
# staging setup, a workstation, or to try a backup and its restore; in
# production each member runs on its own machine with the same flags.
#
# Usage:
#   deploy/etcd/local-cluster.sh start             start the three members
#   deploy/etcd/local-cluster.sh stop              stop them (SIGTERM, then wait)
#   deploy/etcd/local-cluster.sh status            which members run
#   deploy/etcd/local-cluster.sh endpoints         the client endpoints, comma separated
#   deploy/etcd/local-cluster.sh restore SNAPSHOT  replace the data of every member
#                                                  by a snapshot (members stopped)
#
# Environment (defaults in brackets):
#   ETCD, ETCDUTL         the etcd and etcdutl binaries [etcd, etcdutl]
#   CERTS                 what gen-certs.sh wrote, with member certificates
#                         etcd1, etcd2, etcd3 [./certs]
#   DATA                  data directories, logs and pid files [./data]
#   HOST                  the address members listen on and advertise [127.0.0.1]
#   CLIENT_PORTS          [2379 22379 32379]
#   PEER_PORTS            [2380 22380 32380]
#   METRICS_PORTS         plain HTTP /metrics and /health [2381 22381 32381]
#   TOKEN                 initial cluster token [etdi-pins]
#   MAX_TXN_OPS           [100000]     one etdi approval is one transaction
#   MAX_REQUEST_BYTES     [67108864]   64 MiB, the size of that transaction
#   QUOTA_BACKEND_BYTES   [8589934592] 8 GiB
#   AUTO_COMPACTION_MODE  [periodic]
#   AUTO_COMPACTION_RETENTION [24h]
set -eu

etcd=${ETCD:-etcd}
etcdutl=${ETCDUTL:-etcdutl}
certs=${CERTS:-certs}
data=${DATA:-data}
host=${HOST:-127.0.0.1}
client_ports=${CLIENT_PORTS:-"2379 22379 32379"}
peer_ports=${PEER_PORTS:-"2380 22380 32380"}
metrics_ports=${METRICS_PORTS:-"2381 22381 32381"}
token=${TOKEN:-etdi-pins}
names="etcd1 etcd2 etcd3"

# nth N LIST: the Nth word of LIST.
nth() {
	k=$1
	# shellcheck disable=SC2086 # LIST is split on purpose
	set -- $2
	if [ "$k" -gt $# ]; then
		echo "local-cluster.sh: fewer than $k words in \"$*\"" >&2
		exit 2
	fi
	shift $((k - 1))
	echo "$1"
}

initial_cluster() {
	ic=""
	i=1
	for n in $names; do
		ic="$ic${ic:+,}$n=https://$host:$(nth $i "$peer_ports")"
		i=$((i + 1))
	done
	echo "$ic"
}

endpoints() {
	eps=""
	for p in $client_ports; do
		eps="$eps${eps:+,}$host:$p"
	done
	echo "$eps"
}

running() { # running NAME: the member's process runs
	[ -f "$data/$1.pid" ] && kill -0 "$(cat "$data/$1.pid")" 2>/dev/null
}

start() {
	for f in ca.pem jwt-key.pem jwt-pub.pem; do
		[ -f "$certs/$f" ] || { echo "local-cluster.sh: $certs/$f missing: run deploy/etcd/gen-certs.sh $certs first" >&2; exit 1; }
	done
	mkdir -p "$data"
	ic=$(initial_cluster)
	i=1
	for n in $names; do
		if running "$n"; then
			echo "$n already runs (pid $(cat "$data/$n.pid"))"
			i=$((i + 1))
			continue
		fi
		cp=$(nth $i "$client_ports")
		pp=$(nth $i "$peer_ports")
		mp=$(nth $i "$metrics_ports")
		nohup "$etcd" \
			--name "$n" \
			--data-dir "$data/$n" \
			--listen-client-urls "https://$host:$cp" \
			--advertise-client-urls "https://$host:$cp" \
			--listen-peer-urls "https://$host:$pp" \
			--initial-advertise-peer-urls "https://$host:$pp" \
			--listen-metrics-urls "http://$host:$mp" \
			--initial-cluster "$ic" \
			--initial-cluster-token "$token" \
			--initial-cluster-state new \
			--client-cert-auth \
			--trusted-ca-file "$certs/ca.pem" \
			--cert-file "$certs/$n.pem" \
			--key-file "$certs/$n-key.pem" \
			--peer-client-cert-auth \
			--peer-trusted-ca-file "$certs/ca.pem" \
			--peer-cert-file "$certs/$n.pem" \
			--peer-key-file "$certs/$n-key.pem" \
			--auth-token "jwt,pub-key=$certs/jwt-pub.pem,priv-key=$certs/jwt-key.pem,sign-method=ES256,ttl=10m" \
			--max-txn-ops "${MAX_TXN_OPS:-100000}" \
			--max-request-bytes "${MAX_REQUEST_BYTES:-67108864}" \
			--quota-backend-bytes "${QUOTA_BACKEND_BYTES:-8589934592}" \
			--auto-compaction-mode "${AUTO_COMPACTION_MODE:-periodic}" \
			--auto-compaction-retention "${AUTO_COMPACTION_RETENTION:-24h}" \
			>>"$data/$n.log" 2>&1 </dev/null &
		echo $! >"$data/$n.pid"
		echo "started $n (pid $!): clients https://$host:$cp, log $data/$n.log"
		i=$((i + 1))
	done
}

stop() {
	for n in $names; do
		if running "$n"; then
			kill "$(cat "$data/$n.pid")"
		fi
	done
	for n in $names; do
		t=0
		while running "$n"; do
			t=$((t + 1))
			if [ $t -gt 300 ]; then
				echo "local-cluster.sh: $n did not stop in 30 s" >&2
				exit 1
			fi
			sleep 0.1
		done
		rm -f "$data/$n.pid"
	done
}

status() {
	for n in $names; do
		if running "$n"; then
			echo "$n runs (pid $(cat "$data/$n.pid"))"
		else
			echo "$n is down"
		fi
	done
}

restore() {
	snap=$1
	[ -f "$snap" ] || { echo "local-cluster.sh: no snapshot $snap" >&2; exit 1; }
	for n in $names; do
		if running "$n"; then
			echo "local-cluster.sh: $n runs: stop every member before a restore" >&2
			exit 1
		fi
	done
	"$etcdutl" snapshot status "$snap" -w table
	ic=$(initial_cluster)
	stamp=$(date +%Y%m%d%H%M%S)
	i=1
	for n in $names; do
		if [ -e "$data/$n" ]; then
			mv "$data/$n" "$data/$n.before-restore-$stamp"
			echo "kept the old data of $n in $data/$n.before-restore-$stamp"
		fi
		"$etcdutl" snapshot restore "$snap" \
			--name "$n" \
			--data-dir "$data/$n" \
			--initial-cluster "$ic" \
			--initial-cluster-token "$token" \
			--initial-advertise-peer-urls "https://$host:$(nth $i "$peer_ports")" \
			--bump-revision 1000000000 --mark-compacted
		i=$((i + 1))
	done
	echo "restored; start the members with: $0 start"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
endpoints) endpoints ;;
restore)
	[ $# -eq 2 ] || { echo "usage: $0 restore SNAPSHOT" >&2; exit 2; }
	restore "$2"
	;;
*)
	echo "usage: $0 start|stop|status|endpoints|restore SNAPSHOT" >&2
	exit 2
	;;
esac
