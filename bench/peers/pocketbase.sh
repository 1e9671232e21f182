#!/usr/bin/env bash
# Builds the PocketBase peer of bench/data-crud.ts once: bench/peers/pocketbase/ (a main.go of three
# lines and a go.mod pinning github.com/pocketbase/pocketbase) into .cache/pocketbase-<version>/pocketbase,
# from the Go module proxy. Idempotent: prints the binary's path and exits when it is built already
# (offline from then on). Usage: bash bench/peers/pocketbase.sh  → the binary's path on stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SRC="$ROOT/bench/peers/pocketbase"
VERSION="$(awk '$1 == "require" && $2 == "github.com/pocketbase/pocketbase" { print $3 }' "$SRC/go.mod")"
OUT="$ROOT/.cache/pocketbase-$VERSION"
BIN="$OUT/pocketbase"
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[[ -x "$GO" ]] || { echo "pocketbase peer: no Go toolchain (go not on PATH, nor /usr/local/go/bin/go)" >&2; exit 3; }
mkdir -p "$OUT"
echo "pocketbase peer: building PocketBase $VERSION with $("$GO" version) (once; a minute or two)" >&2
# CGO off: PocketBase's default SQLite driver is pure Go (modernc.org/sqlite)
(cd "$SRC" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" build -trimpath -o "$BIN.tmp" .)
mv "$BIN.tmp" "$BIN"
echo "$BIN"
