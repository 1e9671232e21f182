#!/usr/bin/env bash
# What `npm test` runs: starts the test engines (scripts/test-infra.sh), then the vitest
# projects unit, int, split, serial and e2e one after the other, and ends with the totals on one line:
#   N passed, N failed, N skipped
# Exits non-zero when a test failed, when vitest itself failed (an error outside a test, a
# crash) or when the engines could not be started. A project without test files passes.
#
#   scripts/test.sh                 all projects (unit, int, split, serial, e2e)
#   scripts/test.sh unit            only the named projects (unit alone skips the engines)
#   VITEST_ARGS='-t wallet' scripts/test.sh unit   extra vitest arguments
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
LATEST_REPORTS=$ROOT/.test-infra/reports # the JSON reports of the last run, one file per project
PROJECTS=("$@")
((${#PROJECTS[@]})) || PROJECTS=(unit int split serial e2e)

status=0
infra_ok=1
needs_infra=0
for p in "${PROJECTS[@]}"; do [[ $p == unit ]] || needs_infra=1; done

if ((needs_infra)); then
  if bash "$ROOT/scripts/test-infra.sh" </dev/null; then
    # shellcheck source=/dev/null
    source "$ROOT/.test-infra/env"
  else
    echo "[test] ERROR: the test engines did not start; int and e2e are not run" >&2
    infra_ok=0
    status=1
  fi
fi

# Static checks (type check, lint, formatting) run with the full suite; a failing one counts as one failure.
static_failed=0
if (($# == 0)); then
  echo "[test] ---- static checks: tsc --noEmit, eslint, prettier --check ----"
  if ! "$ROOT/node_modules/.bin/tsc" --noEmit -p "$ROOT" </dev/null; then
    echo "[test] type check failed" >&2
    static_failed=$((static_failed + 1))
  fi
  if ! "$ROOT/node_modules/.bin/eslint" "$ROOT" </dev/null; then
    echo "[test] lint failed" >&2
    static_failed=$((static_failed + 1))
  fi
  if ! (cd "$ROOT" && "$ROOT/node_modules/.bin/prettier" --check . --log-level warn </dev/null); then
    echo "[test] formatting differs from prettier's (npm run format)" >&2
    static_failed=$((static_failed + 1))
  fi
fi

mkdir -p "$ROOT/.test-infra"
REPORTS=$(mktemp -d "$ROOT/.test-infra/reports.XXXXXX") # private to this run: runs may overlap
read -r -a extra <<<"${VITEST_ARGS:-}"
if [[ -x $ROOT/node_modules/.bin/vitest ]]; then VITEST=("$ROOT/node_modules/.bin/vitest"); else VITEST=(npx --no-install vitest); fi

for p in "${PROJECTS[@]}"; do
  if [[ $p != unit ]] && ((infra_ok == 0)); then
    echo "[test] $p: skipped, engines unavailable" >&2
    continue
  fi
  echo "[test] ---- vitest project: $p ----"
  "${VITEST[@]}" run --project "$p" --passWithNoTests \
    --reporter=default --reporter=json --outputFile.json="$REPORTS/$p.json" "${extra[@]}" </dev/null
  rc=$?
  if ((rc != 0)); then
    echo "[test] $p: vitest exited with $rc" >&2
    status=1
  fi
done

# Totals from the JSON reports. A project without a report (vitest crashed, or not run) already
# failed through its exit code; an unreadable report or a test file that failed to load counts as a failure.
summary=$(node --input-type=module - "$REPORTS" "${PROJECTS[@]}" <<'EOF'
import { readFileSync, existsSync } from 'node:fs';
const [dir, ...projects] = process.argv.slice(2);
let passed = 0, failed = 0, skipped = 0, broken = 0;
for (const p of projects) {
  const file = `${dir}/${p}.json`;
  if (!existsSync(file)) continue; // not run (engines down) or vitest died: its exit code already counts
  try {
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests ?? 0;
    failed += r.numFailedTests ?? 0;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    // a suite that failed to load (syntax error, throwing import) has no failed test but failed
    broken += (r.testResults ?? []).filter((s) => s.status === 'failed' && (s.assertionResults ?? []).length === 0).length;
  } catch (err) {
    broken += 1;
    console.error(`[test] cannot read ${file}: ${err.message}`);
  }
}
console.log(`${passed} ${failed} ${skipped} ${broken}`);
EOF
) || summary="0 0 0 1"
read -r passed failed skipped broken <<<"$summary"
rm -rf "$LATEST_REPORTS" && mv "$REPORTS" "$LATEST_REPORTS" || true
if ((broken > 0)); then
  echo "[test] $broken test file(s) failed to load; each counts as one failure (see the output above)" >&2
  failed=$((failed + broken))
fi
failed=$((failed + static_failed))
((failed == 0)) || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
