#!/bin/sh
# gen-certs.sh: the certificates of an etcd cluster holding etdi's pin
# store (docs/etcd.md). With openssl, writes into OUTDIR (default ./certs):
#
#   ca.pem, ca-key.pem            a CA for the cluster (keep ca-key.pem offline)
#   MEMBER.pem, MEMBER-key.pem    one per member, for clients and peers alike
#                                 (server and client authentication)
#   USER.pem, USER-key.pem        one client certificate per user, the user
#                                 name as common name: etcd takes it as the
#                                 user when auth is enabled
#   jwt-key.pem, jwt-pub.pem      the key pair signing etcd's auth tokens
#                                 (--auth-token jwt,...), the same on every member
#
# Usage: deploy/etcd/gen-certs.sh [OUTDIR]
#
# Environment:
#   MEMBERS     member names, each also a DNS name of its certificate
#               (default "etcd1 etcd2 etcd3", the docker compose services)
#   EXTRA_SANS  more subject alternative names for every member certificate,
#               comma separated, e.g. "DNS:etcd.example.com,IP:10.0.0.5":
#               every name or address clients and peers dial must be there
#               (localhost and 127.0.0.1 always are)
#   USERS       client certificates (default "root etdi-client etdi-approver")
#   DAYS        validity of member and client certificates (default 365);
#               the CA's is ten times that
#
# Running it again keeps the CA and every file that exists and makes only
# what is missing, so a new member or user is one more run. To renew a
# certificate, delete its two files and run it again.
set -eu

out=${1:-certs}
members=${MEMBERS:-"etcd1 etcd2 etcd3"}
users=${USERS:-"root etdi-client etdi-approver"}
days=${DAYS:-365}
extra=${EXTRA_SANS:-}

command -v openssl >/dev/null 2>&1 || { echo "gen-certs.sh: openssl not found" >&2; exit 1; }
case $days in '' | *[!0-9]*) echo "gen-certs.sh: DAYS must be a number of days" >&2; exit 2 ;; esac
for n in $members $users; do
	case $n in
	ca | jwt | *[!A-Za-z0-9._-]* | [._-]*) echo "gen-certs.sh: bad member or user name: $n" >&2; exit 2 ;;
	esac
done

for m in $members; do
	for u in $users; do
		if [ "$m" = "$u" ]; then
			echo "gen-certs.sh: $m is both a member and a user: their files would be the same" >&2
			exit 2
		fi
	done
done

umask 077
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

newkey() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

if [ ! -f "$out/ca.pem" ]; then
	newkey "$out/ca-key.pem"
	openssl req -x509 -new -key "$out/ca-key.pem" -sha256 -days $((days * 10)) \
		-subj "/CN=etdi etcd CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$out/ca.pem"
	echo "made $out/ca.pem"
fi

# issue NAME EXTENSIONS: a certificate with common name NAME signed by the CA.
issue() {
	name=$1
	if [ -f "$out/$name.pem" ]; then
		return
	fi
	newkey "$out/$name-key.pem"
	openssl req -new -key "$out/$name-key.pem" -subj "/CN=$name" -out "$tmp/$name.csr"
	printf '%s\n' "$2" >"$tmp/$name.ext"
	openssl x509 -req -in "$tmp/$name.csr" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" \
		-set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
		-extfile "$tmp/$name.ext" -out "$out/$name.pem" 2>/dev/null
	echo "made $out/$name.pem"
}

for m in $members; do
	san="DNS:$m,DNS:localhost,IP:127.0.0.1"
	if [ -n "$extra" ]; then
		san="$san,$extra"
	fi
	issue "$m" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san"
done
for u in $users; do
	issue "$u" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
done

if [ ! -f "$out/jwt-key.pem" ]; then
	newkey "$out/jwt-key.pem"
	openssl pkey -in "$out/jwt-key.pem" -pubout -out "$out/jwt-pub.pem"
	echo "made $out/jwt-key.pem"
fi
