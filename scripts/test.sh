#!/usr/bin/env bash
# What `npm test` runs: starts the test engines (scripts/test-infra.sh), then the vitest
# projects unit, int, split, serial and e2e, and ends with the totals on one line:
#   N passed, N failed, N skipped
# Exits non-zero when a test failed, when vitest itself failed (an error outside a test, a
# crash) or when the engines could not be started. A project without test files passes.
# Time on 2 cores is spent where it overlaps: the engines start (installs, clamd's signatures,
# the JVMs) while unit runs, the static checks run beside the tests at a lower priority, and e2e
# (embedded engines only, none of the shared servers) runs beside serial (mostly waiting for Kafka
# to stop and start); the output of what ran beside is printed when it is done.
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
has_project() {
  local p
  for p in "${PROJECTS[@]}"; do [[ $p == "$1" ]] && return 0; done
  return 1
}

mkdir -p "$ROOT/.test-infra"
REPORTS=$(mktemp -d "$ROOT/.test-infra/reports.XXXXXX") # private to this run: runs may overlap
status=0
needs_infra=0
for p in "${PROJECTS[@]}"; do [[ $p == unit ]] || needs_infra=1; done

infra_pid=''
if ((needs_infra)); then
  echo "[test] starting the test engines in the background (scripts/test-infra.sh; log shown when ready)"
  bash "$ROOT/scripts/test-infra.sh" </dev/null >"$REPORTS/infra.log" 2>&1 &
  infra_pid=$!
fi
infra_state=unknown # ok | failed, once waited for
wait_for_infra() {
  [[ $infra_state == unknown ]] || return 0
  if wait "$infra_pid"; then
    infra_state=ok
    cat "$REPORTS/infra.log"
    # shellcheck source=/dev/null
    source "$ROOT/.test-infra/env"
  else
    infra_state=failed
    cat "$REPORTS/infra.log" >&2
    echo "[test] ERROR: the test engines did not start; the projects that need them are not run" >&2
    status=1
  fi
}

# Static checks (type check, lint, formatting) run with the full suite; a failing one counts as one failure.
# They run beside the tests, at a lower priority: the int files leave part of both cores idle while
# they wait on the engines, and the checks (about 3 minutes of CPU) take that time instead of
# running first. Their output is printed after the tests'.
static_pid=''
if (($# == 0)); then
  echo "[test] ---- static checks: tsc --noEmit, eslint, prettier --check (beside the tests; output at the end) ----"
  (
    failures=0
    nice -n 10 "$ROOT/node_modules/.bin/tsc" --noEmit -p "$ROOT" </dev/null || {
      echo "[test] type check failed"
      failures=$((failures + 1))
    }
    # errors only: hundreds of warnings would push the failures out of the tail a CI log keeps
    nice -n 10 "$ROOT/node_modules/.bin/eslint" --quiet "$ROOT" </dev/null || {
      echo "[test] lint failed"
      failures=$((failures + 1))
    }
    (cd "$ROOT" && nice -n 10 "$ROOT/node_modules/.bin/prettier" --check . --log-level warn </dev/null) || {
      echo "[test] formatting differs from prettier's (npm run format)"
      failures=$((failures + 1))
    }
    echo "$failures" >"$REPORTS/static.failed"
  ) >"$REPORTS/static.out" 2>&1 &
  static_pid=$!
fi
static_failed=0
wait_for_static() {
  [[ -n $static_pid ]] || return 0
  wait "$static_pid"
  echo "[test] ---- static checks (ran beside the tests) ----"
  cat "$REPORTS/static.out"
  static_failed=$(cat "$REPORTS/static.failed" 2>/dev/null || echo 1) # no count: the checks themselves died
  ((static_failed == 0)) || status=1
}

read -r -a extra <<<"${VITEST_ARGS:-}"
if [[ -x $ROOT/node_modules/.bin/vitest ]]; then VITEST=("$ROOT/node_modules/.bin/vitest"); else VITEST=(npx --no-install vitest); fi
# int runs two files at once (vitest.config.ts) unless INT_WORKERS says otherwise: three left cores
# idle less but saved no time, and a file holding transactions open (the global order's slow ones)
# holds back the log readers of every file beside it (pg_snapshot_xmin is the server's)
declare -A WORKERS=([int]=${INT_WORKERS:-2})
# int and split files share their worker's loaded modules (--no-isolate: vitest reads it for the
# whole run, not per project): loading the platform again for every file was 156 s of a 586 s int
# run and 172 s of a 748 s split run (vitest's "collect"; split with shared modules: 622 s, collect
# 23 s, 2026-12-02); each file still starts platforms, role processes and databases of its own
declare -A SHARED_MODULES=([int]=1 [split]=1)
run_project() {
  local workers=() isolation=()
  [[ -n ${WORKERS[$1]:-} ]] && workers=(--maxWorkers "${WORKERS[$1]}")
  [[ -n ${SHARED_MODULES[$1]:-} ]] && isolation=(--no-isolate)
  "${VITEST[@]}" run --project "$1" --passWithNoTests "${workers[@]}" "${isolation[@]}" \
    --reporter=default --reporter=json --outputFile.json="$REPORTS/$1.json" "${extra[@]}" </dev/null
}
project_done() { # project, exit code
  if (($2 != 0)); then
    echo "[test] $1: vitest exited with $2" >&2
    status=1
  fi
}

e2e_pid=''
for p in "${PROJECTS[@]}"; do
  if [[ $p != unit ]]; then
    wait_for_infra
    if [[ $infra_state != ok ]]; then
      echo "[test] $p: skipped, engines unavailable" >&2
      continue
    fi
  fi
  if [[ $p == e2e && -n $e2e_pid ]]; then
    continue # started beside serial
  fi
  if [[ $p == serial ]] && has_project e2e; then
    echo "[test] ---- vitest project: e2e (beside serial; its output follows serial's) ----"
    run_project e2e >"$REPORTS/e2e.out" 2>&1 &
    e2e_pid=$!
  fi
  echo "[test] ---- vitest project: $p ----"
  run_project "$p"
  project_done "$p" $?
done
if [[ -n $e2e_pid ]]; then
  wait "$e2e_pid"
  rc=$?
  echo "[test] ---- vitest project: e2e (ran beside serial) ----"
  cat "$REPORTS/e2e.out"
  project_done e2e "$rc"
fi
if [[ -n $infra_pid && $infra_state == unknown ]]; then wait "$infra_pid" || true; fi
wait_for_static

# Totals from the JSON reports. A project without a report (vitest crashed, or not run) already
# failed through its exit code; an unreadable report or a test file that failed to load counts as a failure.
summary=$(node --input-type=module - "$REPORTS" "${PROJECTS[@]}" <<'EOF'
import { readFileSync, existsSync } from 'node:fs';
const [dir, ...projects] = process.argv.slice(2);
let passed = 0, failed = 0, skipped = 0, broken = 0;
const failures = []; // named again just before the totals, where a CI log's tail keeps them
const firstLine = (messages) => String(messages?.[0] ?? '').split('\n')[0].slice(0, 300);
for (const p of projects) {
  const file = `${dir}/${p}.json`;
  if (!existsSync(file)) continue; // not run (engines down) or vitest died: its exit code already counts
  try {
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests ?? 0;
    failed += r.numFailedTests ?? 0;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    // a file that failed without a failed test — it failed to load (syntax error, throwing import),
    // or a beforeAll/afterAll hook threw and its tests were skipped — counts as one failure
    for (const s of r.testResults ?? []) {
      const file = String(s.name ?? '').replace(/^.*?\/tests\//, 'tests/');
      const failedTests = (s.assertionResults ?? []).filter((a) => a.status === 'failed');
      for (const a of failedTests) failures.push(`${p} ${file} > ${a.fullName}: ${firstLine(a.failureMessages)}`);
      if (s.status === 'failed' && failedTests.length === 0) {
        broken += 1;
        failures.push(`${p} ${file} (outside its tests): ${firstLine([s.message])}`);
      }
    }
  } catch (err) {
    broken += 1;
    console.error(`[test] cannot read ${file}: ${err.message}`);
  }
}
for (const f of failures) console.error(`[test] FAILED ${f}`);
console.log(`${passed} ${failed} ${skipped} ${broken}`);
EOF
) || summary="0 0 0 1"
read -r passed failed skipped broken <<<"$summary"
rm -rf "$LATEST_REPORTS" && mv "$REPORTS" "$LATEST_REPORTS" || true
if ((broken > 0)); then
  echo "[test] $broken test file(s) failed outside their tests (load or hooks); each counts as one failure (see the output above)" >&2
  failed=$((failed + broken))
fi
failed=$((failed + static_failed))
((failed == 0)) || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
