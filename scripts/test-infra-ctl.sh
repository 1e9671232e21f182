#!/usr/bin/env bash
# Stops or starts one test server, for tests that simulate an outage. Reuses the config
# scripts/test-infra.sh wrote, so a restart is quick; run that script once first.
#
#   scripts/test-infra-ctl.sh <kafka|redis|postgres|s3|clamd> <stop|kill|start|restart|status>
#
#   stop     graceful stop (Kafka: controlled shutdown; Redis: SHUTDOWN NOSAVE)
#   kill     SIGKILL, a crash (Postgres: immediate shutdown)
#   start    start it and wait until it answers a real request; no-op when it runs
#   restart  stop, then start
#   status   prints running or stopped; exit 0 when running, 3 when stopped
# Tests find this script's path in $TEST_INFRA_CTL (from .test-infra/env).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=infra/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/infra/lib.sh"

usage() { sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
(($# == 2)) || usage
svc=$1 action=$2
case $svc in
  postgres | redis | kafka | s3 | clamd) ;;
  pg) svc=postgres ;; s3proxy) svc=s3 ;; clamav) svc=clamd ;;
  *) usage ;;
esac

start_one() {
  local t0=$SECONDS
  need_node_modules
  case $svc in
    postgres) [[ -f $PGDATA_DIR/PG_VERSION ]] ;;
    redis) [[ -f $REDIS_DIR/redis.conf ]] ;;
    kafka) [[ -f $KAFKA_DIR/data/meta.properties ]] ;;
    s3) [[ -f $S3_DIR/s3proxy.conf ]] ;;
    clamd) [[ -f $CLAMD_DIR/clamd.conf ]] ;;
  esac || die "$svc has never been set up here: run scripts/test-infra.sh first"
  svc_launch "$svc"
  svc_wait "$svc"
  [[ $svc != postgres ]] || postgres_after_ready
  svc_verify "$svc" >/dev/null
  log "$svc: ready on $HOST:$(svc_port "$svc") ($((SECONDS - t0))s)"
}

stop_one() {
  local how=$1
  if ! "${svc}_running"; then log "$svc: not running"; return 0; fi
  if [[ $how == kill ]]; then log "$svc: killing…"; else log "$svc: stopping…"; fi
  if [[ $how == kill ]]; then svc_kill "$svc"; else svc_stop "$svc"; fi
  log "$svc: stopped"
}

case $action in
  status)
    if "${svc}_running"; then echo running; exit 0; else echo stopped; exit 3; fi ;;
  stop | kill) infra_lock; stop_one "$action" ;;
  start) infra_lock; start_one ;;
  restart) infra_lock; stop_one stop; start_one ;;
  *) usage ;;
esac
