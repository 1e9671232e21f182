#!/usr/bin/env bash
# Makes the mutual-TLS certificates billing's gRPC needs between roles (the gateway asks write-api's
# CheckLimit over the network, and write-api serves gRPC beyond loopback only with mutual TLS):
#
#   bash scripts/grpc-certs.sh                       # into certs/grpc/, for docker-compose.yml
#   bash scripts/grpc-certs.sh <dir> [name...]       # another folder; names the server answers to
#
# It writes ca.crt (the CA both sides trust), server.crt/server.key (write-api; its names: the
# given ones, default write-api and localhost) and client.crt/client.key (the gateway). The CA's
# own key is removed once both are signed, so no further certificate can be made from it: run the
# script again (with --force over an existing folder) to replace them all. Existing certificates
# are kept unless --force is given, so `docker compose up` does not find them changed under it.
set -euo pipefail
force=0
args=()
for a in "$@"; do
  if [[ $a == --force ]]; then force=1; else args+=("$a"); fi
done
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${args[0]:-$root/certs/grpc}
names=("${args[@]:1}")
((${#names[@]})) || names=(write-api localhost)
command -v openssl >/dev/null || {
  echo "grpc-certs: openssl is needed (apt-get install openssl, brew install openssl)" >&2
  exit 1
}
if [[ -f $dir/ca.crt && $force == 0 ]]; then
  echo "grpc-certs: $dir has certificates already (--force replaces them)" >&2
  exit 0
fi
mkdir -p "$dir"
chmod 700 "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
san=$(printf 'DNS:%s,' "${names[@]}")
days=825 # the longest a TLS client accepts for a leaf certificate
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key "$work/ca.key"
openssl req -x509 -new -key "$work/ca.key" -subj /CN=platform-grpc-ca -days $days -out "$dir/ca.crt"
leaf() { # name, subject, extensions
  key "$dir/$1.key"
  openssl req -new -key "$dir/$1.key" -subj "/CN=$2" -out "$work/$1.csr"
  printf '%b' "$3" >"$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA "$dir/ca.crt" -CAkey "$work/ca.key" -CAserial "$work/ca.srl" -CAcreateserial \
    -days $days -extfile "$work/$1.ext" -out "$dir/$1.crt" 2>/dev/null
}
leaf server "${names[0]}" "subjectAltName=${san%,}\nextendedKeyUsage=serverAuth\n"
leaf client platform-gateway "extendedKeyUsage=clientAuth\n"
# The containers run as the image's user, not as the one who made the files, and compose mounts
# them as they are: the keys are readable by all inside this folder, which only its owner may enter.
chmod 644 "$dir"/*.key "$dir"/*.crt
echo "grpc-certs: wrote ca.crt, server.crt/key (${names[*]}) and client.crt/key to $dir"
