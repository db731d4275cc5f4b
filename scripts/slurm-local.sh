#!/usr/bin/env bash
# A real single-node Slurm cluster (Debian bookworm's Slurm 22.05.8) on loopback, without
# systemd: munged, a private MariaDB, slurmdbd, slurmctld, slurmd and slurmrestd (JWT auth)
# run as plain background processes under one state directory. Used by the real-Slurm
# end-to-end test (tests/e2e/real_slurm_test.cc) and for trying the operator by hand.
# Background and gotchas: /work/shared/reference/slurm-local-cluster.md.
#
# Usage (as root): scripts/slurm-local.sh COMMAND
#   install  apt-get the packages (idempotent; services are not started). Exit 100 when apt
#            cannot install them (no mirror, ...); any other failure exits 1.
#   start    start the cluster, wait until slurmrestd answers GET /slurm/v0.0.38/ping with
#            the token, print timings. A no-op when it already runs with the same settings;
#            a stale or half-started state directory (crashed run) is cleaned first.
#   stop     cancel every job, stop every daemon (and this cluster's slurmstepd), check that
#            no process is left. Logs stay in $SLURM_LOCAL_DIR/log.
#   restart  stop + start.
#   status   one line per daemon plus the REST ping; exit 0 only when all is up.
#   check    ping slurmrestd; if it does not answer (Slurm 22.05.8 can stop accepting
#            connections), restart it. Exit 0 when it answers afterwards.
#   env      shell exports for callers: eval "$(scripts/slurm-local.sh env)"
#
# Settings (environment):
#   SLURM_LOCAL_DIR        state directory              (default /tmp/slurm-local)
#   SLURM_LOCAL_REST_PORT  slurmrestd TCP port          (6820)
#   SLURM_LOCAL_DB_PORT    MariaDB port                 (3307)
#   SLURM_LOCAL_DBD_PORT   slurmdbd port                (6819)
#   SLURM_LOCAL_CTLD_PORT  slurmctld port               (6817)
#   SLURM_LOCAL_SLURMD_PORT slurmd port                 (6818)
#   SLURM_LOCAL_USER       user of the JWT; jobs run as this user (root)
#   SLURM_LOCAL_MIN_JOB_AGE seconds a finished job stays in slurmctld (5)
#   SLURM_LOCAL_EXTRA_PACKAGES more packages for `install` (space-separated)
#   SLURM_LOCAL_CPUS       CPUs the node advertises (max(real, 4); more than real is fine for
#                          test jobs, it lets a long job and short jobs run side by side)
# Every daemon listens on TCP (slurmctld/slurmd/slurmdbd on all addresses, as Slurm 22.05 has
# no bind option for them; MariaDB and slurmrestd on 127.0.0.1 only).
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
DIR=${DIR%/}
REST_PORT=${SLURM_LOCAL_REST_PORT:-6820}
DB_PORT=${SLURM_LOCAL_DB_PORT:-3307}
DBD_PORT=${SLURM_LOCAL_DBD_PORT:-6819}
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-6818}
JOB_USER=${SLURM_LOCAL_USER:-root}
MIN_JOB_AGE=${SLURM_LOCAL_MIN_JOB_AGE:-5}
CPUS_WANTED=${SLURM_LOCAL_CPUS:-}
CLUSTER=localcluster
PARTITION=debug
REST_USER=slurmrest
API=v0.0.38
LOCK="$DIR.lock"
MARKER=".slurm-local"   # in $DIR: this directory is ours and may be wiped
# Bumped when the generated configuration changes, so `start` replaces an older cluster.
LAYOUT=3

PKGS=(slurmctld slurmd slurmrestd slurm-client slurm-wlm-basic-plugins slurm-wlm-jwt-plugin
      munge slurmdbd slurm-wlm-mysql-plugin mariadb-server)
# shellcheck disable=SC2206  # word splitting wanted
PKGS+=(${SLURM_LOCAL_EXTRA_PACKAGES:-})

export SLURM_CONF="$DIR/etc/slurm.conf"
# A caller's SLURM_JWT would switch the client commands below to auth/jwt.
unset SLURM_JWT SLURMRESTD_SECURITY || true
export LC_ALL=C

T0=$(date +%s.%N)
# A reader that goes away (`start | head`) must not kill a half-done start.
trap '' PIPE
log() { echo "slurm-local: $*" 2>/dev/null || true; }
err() { echo "slurm-local: $*" >&2 2>/dev/null || true; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }
step() { log "$(printf '%-44s %6ss' "$1" "$(elapsed)")"; }

need_root() {
  [ "$(id -u)" = 0 ] || { err "must run as root"; exit 1; }
}

check_dir() {
  case "$DIR" in
    /*) ;;
    *) err "SLURM_LOCAL_DIR must be an absolute path (got '$DIR')"; exit 1 ;;
  esac
  case "$DIR" in
    /|/tmp|/var|/var/tmp|/root|/home|/usr|/etc|/opt|/srv|/work|/run)
      err "refusing to use '$DIR' as the state directory"; exit 1 ;;
  esac
  if [ -d "$DIR" ] && [ ! -e "$DIR/$MARKER" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
    err "$DIR exists, is not empty and was not made by this script; refusing to touch it"
    exit 1
  fi
}

take_lock() {
  exec 9>"$LOCK"
  flock -w 600 9 || { err "another slurm-local command holds $LOCK"; exit 1; }
}

# ---------------------------------------------------------------- install

pkg_installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing_packages() {
  local p
  for p in "${PKGS[@]}"; do pkg_installed "$p" || echo "$p"; done
}

ensure_users() {
  if ! id -u "$REST_USER" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$REST_USER"
  fi
  local u
  for u in munge mysql; do
    id -u "$u" >/dev/null 2>&1 || { err "user $u is missing (its package's postinst should have made it)"; exit 1; }
  done
  id -u "$JOB_USER" >/dev/null 2>&1 || { err "SLURM_LOCAL_USER '$JOB_USER' does not exist"; exit 1; }
}

POLICY_ADDED=0
remove_policy() {
  if [ "$POLICY_ADDED" = 1 ]; then rm -f /usr/sbin/policy-rc.d; POLICY_ADDED=0; fi
}

cmd_install() {
  need_root
  local missing
  missing=$(missing_packages | tr '\n' ' ')
  if [ -z "${missing// /}" ]; then
    ensure_users
    log "packages already installed ($(dpkg-query -W -f='${Version}' slurmctld))"
    return 0
  fi
  log "installing: $missing"
  local ilog="${TMPDIR:-/tmp}/slurm-local-install.log"
  : >"$ilog"
  # No systemd here: the postinst scripts must not try to start services. Debian's Docker
  # images ship a policy-rc.d that denies it; put a temporary one in if there is none.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# temporary, scripts/slurm-local.sh install\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    POLICY_ADDED=1
    trap remove_policy EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600
              -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  local ok=0
  if apt-get "${opts[@]}" install "${PKGS[@]}" >>"$ilog" 2>&1; then
    ok=1
  else
    log "apt-get install failed; refreshing the package lists and retrying"
    # A package left unpacked by an interrupted run blocks apt until it is configured.
    dpkg --configure -a >>"$ilog" 2>&1 || true
    apt-get -q -o DPkg::Lock::Timeout=600 update >>"$ilog" 2>&1 || true
    if apt-get "${opts[@]}" install "${PKGS[@]}" >>"$ilog" 2>&1; then ok=1; fi
  fi
  remove_policy
  missing=$(missing_packages | tr '\n' ' ')
  if [ "$ok" != 1 ] || [ -n "${missing// /}" ]; then
    err "apt-get could not install the packages (still missing: ${missing:-none}); last lines of $ilog:"
    tail -n 25 "$ilog" >&2
    exit 100
  fi
  ensure_users
  log "installed in $(elapsed)s ($(dpkg-query -W -f='${Version}' slurmctld)); apt log: $ilog"
}

# ---------------------------------------------------------------- processes

# PIDs of processes started for this state directory (their environment carries the marker).
our_pids() {
  grep -lzxF "SLURM_LOCAL_INSTANCE=$DIR" /proc/[0-9]*/environ 2>/dev/null |
    sed -e 's#^/proc/##' -e 's#/environ$##' | grep -vx "$$" || true
}

# is_ours PID: PID carries this instance's marker. A process in the middle of an exec (our
# daemons start through env, setsid and setpriv: three execs) reads as an empty or unreadable
# /proc/PID/environ for a moment; one such read once made a starting munged look dead and
# failed CI. So while PID lives and is no zombie, look again for up to half a second before
# saying no (tests/tools/slurm_local_is_ours_test.sh).
is_ours() {
  local pid=${1:-} tries=0
  [ -n "$pid" ] || return 1
  while ! grep -qzxF "SLURM_LOCAL_INSTANCE=$DIR" "/proc/$pid/environ" 2>/dev/null; do
    [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null ||
      return 1
    tries=$((tries + 1))
    [ "$tries" -lt 25 ] || return 1
    sleep 0.02
  done
}

# Job processes of this cluster: slurmstepd puts SLURM_CONF and SLURM_JOB_ID in their environment.
job_pids() {
  local p
  grep -lzxF "SLURM_CONF=$DIR/etc/slurm.conf" /proc/[0-9]*/environ 2>/dev/null |
    sed -e 's#^/proc/##' -e 's#/environ$##' | while read -r p; do
      [ "$p" != "$$" ] && grep -qz '^SLURM_JOB_ID=' "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
  return 0
}

pid_of() { cat "$DIR/run/$1.pid" 2>/dev/null || true; }

alive() { local p; p=$(pid_of "$1"); is_ours "$p"; }

# launch NAME CMD...: starts CMD in its own session with stdio on log files; records its PID.
# setsid does not fork here (the subshell is no process-group leader), so $! is the daemon.
# Returns once that PID carries the marker, i.e. once the subshell has exec'd `env`, then
# `setsid`, then CMD: before that, /proc/PID/environ is the subshell's own (no marker) and
# `alive` would call a daemon that is still starting dead. Under CI load that window lasted
# long enough that start-up was declared failed and do_stop killed the starting slurmctld.
launch() {
  local name=$1; shift
  (
    exec 9>&-   # the lock must not live on in the daemons
    cd "$DIR/jobs"
    exec env SLURM_LOCAL_INSTANCE="$DIR" setsid "$@" </dev/null >>"$DIR/log/$name.stdout" 2>&1
  ) &
  local pid=$!
  echo "$pid" >"$DIR/run/$name.pid"
  local end=$(( $(date +%s%N) + 30 * 1000000000 ))
  while ! is_ours "$pid"; do
    # Gone, or a zombie: it failed before exec; `alive` will say so.
    [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null ||
      return 0
    if [ "$(date +%s%N)" -gt "$end" ]; then
      err "$name (pid $pid) did not reach exec within 30s"
      return 0
    fi
    sleep 0.01
  done
}

# wait_until NAME SECONDS CMD...: polls CMD until it succeeds; fails early if NAME died.
wait_until() {
  local name=$1 secs=$2; shift 2
  local end=$(( $(date +%s%N) + secs * 1000000000 ))
  while ! "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && ! alive "$name"; then
      err "$name exited during start-up"
      return 1
    fi
    if [ "$(date +%s%N)" -gt "$end" ]; then
      err "timed out after ${secs}s waiting for: $*"
      return 1
    fi
    sleep 0.05
  done
}

# stop_pids SECONDS PID...: SIGTERM, wait, SIGKILL.
stop_pids() {
  local secs=$1; shift
  local p live=()
  for p in "$@"; do is_ours "$p" && live+=("$p"); done
  [ ${#live[@]} -eq 0 ] && return 0
  kill -TERM "${live[@]}" 2>/dev/null || true
  local end=$(( $(date +%s%N) + secs * 1000000000 ))
  while :; do
    local left=()
    for p in "${live[@]}"; do is_ours "$p" && left+=("$p"); done
    [ ${#left[@]} -eq 0 ] && return 0
    if [ "$(date +%s%N)" -gt "$end" ]; then
      err "SIGKILL to ${left[*]} (no exit ${secs}s after SIGTERM)"
      kill -KILL "${left[@]}" 2>/dev/null || true
      sleep 0.2
      return 0
    fi
    sleep 0.05
  done
}

token() { cat "$DIR/token" 2>/dev/null || true; }

rest_ping() {
  local t
  t=$(token)
  [ -n "$t" ] || return 1
  curl -sf --connect-timeout 2 -m 3 -H "X-SLURM-USER-NAME: $JOB_USER" -H "X-SLURM-USER-TOKEN: $t" \
    "http://127.0.0.1:$REST_PORT/slurm/$API/ping" 2>/dev/null | grep -q '"pings"'
}

fingerprint() {
  echo "layout=$LAYOUT rest=$REST_PORT db=$DB_PORT dbd=$DBD_PORT ctld=$CTLD_PORT" \
       "slurmd=$SLURMD_PORT user=$JOB_USER minjobage=$MIN_JOB_AGE cpus=${CPUS_WANTED:-auto}"
}

DAEMONS=(munged mariadb slurmdbd slurmctld slurmd slurmrestd)

all_up() {
  local d
  for d in "${DAEMONS[@]}"; do alive "$d" || return 1; done
  return 0
}

# ---------------------------------------------------------------- start

write_configs() {
  local cpus real_cpus boards sockets cores threads mem node
  node=$(slurmd -C 2>/dev/null | head -n1 || true)
  real_cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  boards=$(sed -n 's/.* Boards=\([0-9]*\).*/\1/p' <<<"$node")
  sockets=$(sed -n 's/.* SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$node")
  cores=$(sed -n 's/.* CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$node")
  threads=$(sed -n 's/.* ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  [ -n "$real_cpus" ] || real_cpus=$(nproc)
  [ -n "$mem" ] || mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 ))
  mem=$(( mem * 95 / 100 ))
  cpus=${CPUS_WANTED:-$(( real_cpus > 4 ? real_cpus : 4 ))}
  local topo
  if [ "$cpus" = "$real_cpus" ] && [ -n "$sockets" ] && [ -n "$cores" ] && [ -n "$threads" ]; then
    topo="CPUs=$cpus Boards=${boards:-1} SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads"
  else
    # More CPUs than the machine has: one socket of single-thread cores; slurmd keeps it
    # because of SlurmdParameters=config_overrides.
    topo="CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1"
  fi
  cat >"$DIR/etc/slurm.conf" <<EOF
# Generated by scripts/slurm-local.sh; rewritten on every fresh start.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/etc/jwt_hs256.key
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd
SlurmctldPidFile=$DIR/state/slurmctld.pid
SlurmdPidFile=$DIR/state/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=2
InactiveLimit=0
MinJobAge=$MIN_JOB_AGE
MailProg=/bin/true
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# slurmctld's connection to slurmdbd ignores AuthInfo: the munge socket goes here too.
AccountingStoragePass=$DIR/munge/munge.socket
AccountingStoreFlags=job_comment,job_script,job_env
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
JobAcctGatherType=jobacct_gather/linux
NodeName=localhost NodeAddr=127.0.0.1 $topo RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  chmod 0644 "$DIR/etc/slurm.conf"
  cat >"$DIR/etc/slurmdbd.conf" <<EOF
# Generated by scripts/slurm-local.sh.
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/etc/jwt_hs256.key
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/state/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  chmod 0600 "$DIR/etc/slurmdbd.conf"
}

fail_start() {
  local name=$1
  err "start failed at: $name; log tails follow (all logs in $DIR/log)"
  local f
  for f in "$DIR/log/$name.log" "$DIR/log/$name.stdout" "$DIR/munge/$name.log"; do
    [ -s "$f" ] && { echo "---- $f" >&2; tail -n 30 "$f" >&2; }
  done
  do_stop >/dev/null 2>&1 || true
  exit 1
}

start_restd() {
  # slurmrestd refuses root and SlurmUser: it binds as root, then drops to slurmrest.
  # SLURM_JWT=daemon makes it use auth/jwt (the caller's token) towards slurmctld/slurmdbd.
  launch slurmrestd env SLURM_JWT=daemon slurmrestd -u "$REST_USER" -g "$REST_USER" \
    -a rest_auth/jwt -s "openapi/$API,openapi/db$API" "127.0.0.1:$REST_PORT"
}

fresh_start() {
  T0=$(date +%s.%N)
  rm -rf "$DIR"
  mkdir -p "$DIR"
  chmod 0755 "$DIR"
  touch "$DIR/$MARKER"
  mkdir -p "$DIR"/{etc,log,run,state,spool/slurmd,munge,mysql}
  mkdir -p "$DIR/jobs" && chmod 1777 "$DIR/jobs"
  chmod 0755 "$DIR"/{etc,log,run,state,spool,spool/slurmd}
  fingerprint >"$DIR/run/fingerprint"

  # munged with its own key and socket (dir 0755, key 0600, both owned by munge)
  chown munge:munge "$DIR/munge"; chmod 0755 "$DIR/munge"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$DIR/munge/munge.key"; chmod 0600 "$DIR/munge/munge.key"
  local sock="$DIR/munge/munge.socket"
  launch munged setpriv --reuid=munge --regid=munge --init-groups munged --foreground \
    --socket="$sock" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed"
  wait_until munged 20 sh -c "munge -S '$sock' -n | unmunge -S '$sock'" || fail_start munged
  step "munged up"

  # JWT key (HS256), owned by SlurmUser (root)
  dd if=/dev/urandom of="$DIR/etc/jwt_hs256.key" bs=32 count=1 status=none
  chmod 0600 "$DIR/etc/jwt_hs256.key"
  DB_PASS=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  write_configs

  # MariaDB on its own datadir, port and socket
  chown mysql:mysql "$DIR/mysql"
  if ! mariadb-install-db --no-defaults --user=mysql --datadir="$DIR/mysql/data" \
      --auth-root-authentication-method=socket --skip-test-db --innodb-log-file-size=8M \
      >"$DIR/log/mariadb-install-db.log" 2>&1; then
    cp "$DIR/log/mariadb-install-db.log" "$DIR/log/mariadb.log"; fail_start mariadb
  fi
  local dsock="$DIR/mysql/mysqld.sock"
  launch mariadb mariadbd --no-defaults --user=mysql --datadir="$DIR/mysql/data" \
    --socket="$dsock" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$DIR/mysql/mysqld.pid" \
    --innodb-log-file-size=8M --innodb-buffer-pool-size=32M --skip-log-bin
  wait_until mariadb 60 mariadb-admin --no-defaults -S "$dsock" -u root ping || fail_start mariadb
  mariadb --no-defaults -S "$dsock" -u root -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
     GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" || fail_start mariadb
  step "mariadb up (port $DB_PORT)"

  start_dbd_and_ctld

  # slurmd only after slurmctld answers (it backs off and ignores SIGTERM while retrying).
  launch slurmd slurmd -D -N localhost
  wait_until slurmd 60 sh -c "sinfo -h -n localhost -o %T | grep -qx idle" || fail_start slurmd
  step "slurmd registered, node idle"

  # Warm-up job: absorbs the first scheduling pass (~3 s after slurmctld starts) and proves
  # that jobs launch. Test jobs get ids from 2 on.
  local wid
  wid=$(sbatch --parsable -p "$PARTITION" -J warm-up -D "$DIR/jobs" -o /dev/null \
        --wrap=true 2>>"$DIR/log/slurmctld.stdout") || fail_start slurmctld
  wid=${wid%%;*}
  wait_until slurmctld 60 sh -c "scontrol -o show job $wid | grep -q JobState=COMPLETED" ||
    fail_start slurmd
  step "warm-up job $wid COMPLETED"

  # The token lets anyone submit as $JOB_USER: readable by root only.
  (umask 077; scontrol token username="$JOB_USER" lifespan=86400 |
     sed -n 's/^SLURM_JWT=//p' >"$DIR/token")
  [ -s "$DIR/token" ] || fail_start slurmctld
  start_restd
  wait_until slurmrestd 60 rest_ping || fail_start slurmrestd
  step "slurmrestd answers GET /slurm/$API/ping"
  cmd_env >"$DIR/env"
  log "ready: $(cmd_env | tr '\n' ' ')"
}

# start_dbd_and_ctld: slurmdbd, then slurmctld once slurmdbd answers.
start_dbd_and_ctld() {
  launch slurmdbd slurmdbd -D
  wait_until slurmdbd 60 sacctmgr -n -P list cluster format=cluster || fail_start slurmdbd
  step "slurmdbd up"

  launch slurmctld slurmctld -D -i
  wait_until slurmctld 60 sh -c 'scontrol ping | grep -q "is UP"' || fail_start slurmctld
  step "slurmctld answers scontrol ping"
}

cmd_start() {
  need_root
  check_dir
  local missing
  missing=$(missing_packages | tr '\n' ' ')
  if [ -n "${missing// /}" ]; then
    err "packages missing ($missing); run: $0 install"
    exit 2
  fi
  ensure_users
  take_lock
  if [ -e "$DIR/$MARKER" ] && all_up && rest_ping &&
     [ "$(cat "$DIR/run/fingerprint" 2>/dev/null)" = "$(fingerprint)" ]; then
    log "already running (state in $DIR); nothing to do"
    return 0
  fi
  if [ -n "$(our_pids)" ]; then
    log "a stale, broken or differently configured cluster runs from $DIR: stopping it"
    do_stop
  elif [ -d "$DIR" ]; then
    log "removing the previous state directory $DIR"
  fi
  fresh_start
}

# ---------------------------------------------------------------- stop

do_stop() {
  local t0
  t0=$(date +%s.%N)
  if alive slurmctld && scontrol ping 2>/dev/null | grep -q "is UP"; then
    local jobs
    jobs=$(squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
    if [ -n "${jobs// /}" ]; then
      log "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      # shellcheck disable=SC2016
      wait_until "" 20 sh -c '[ -z "$(squeue -h -o %A 2>/dev/null)" ]' || true
    fi
  fi
  stop_pids 10 "$(pid_of slurmrestd)" "$(pid_of slurmd)" "$(pid_of slurmctld)"
  stop_pids 10 "$(pid_of slurmdbd)"
  stop_pids 30 "$(pid_of mariadb)"
  stop_pids 5 "$(pid_of munged)"
  # Leftovers: this cluster's slurmstepd (daemonised, parent PID 1) and any daemon whose PID
  # file was lost carry the marker in their environment; job processes carry our SLURM_CONF.
  local rest
  rest=$( (our_pids; job_pids) | sort -u | tr '\n' ' ')
  if [ -n "${rest// /}" ]; then
    log "killing leftover processes: $rest"
    # shellcheck disable=SC2086
    kill -KILL $rest 2>/dev/null || true
    sleep 0.2
  fi
  rest=$( (our_pids; job_pids) | sort -u | tr '\n' ' ')
  rm -f "$DIR"/run/*.pid 2>/dev/null || true
  if [ -n "${rest// /}" ]; then
    err "processes still alive after stop: $rest"
    return 1
  fi
  log "stopped in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')s; no process left (logs in $DIR/log)"
}

cmd_stop() {
  need_root
  check_dir
  take_lock
  do_stop
}

# ---------------------------------------------------------------- status / check / env

cmd_status() {
  local d rc=0
  for d in "${DAEMONS[@]}"; do
    if alive "$d"; then
      log "$(printf '%-11s running (pid %s)' "$d" "$(pid_of "$d")")"
    else
      log "$(printf '%-11s stopped' "$d")"
      rc=3
    fi
  done
  if rest_ping; then
    log "REST        GET /slurm/$API/ping OK on 127.0.0.1:$REST_PORT"
  else
    log "REST        no answer on 127.0.0.1:$REST_PORT"
    rc=3
  fi
  if alive slurmctld; then
    log "jobs in the live queue: $(squeue -h -o %A 2>/dev/null | wc -l)"
  fi
  return $rc
}

cmd_check() {
  need_root
  check_dir
  local before
  before=$(pid_of slurmrestd)
  if rest_ping; then log "slurmrestd OK"; return 0; fi
  take_lock
  # Another `check` may have restarted it while we waited for the lock.
  if [ "$(pid_of slurmrestd)" != "$before" ] && rest_ping; then log "slurmrestd OK"; return 0; fi
  local d
  for d in munged mariadb slurmdbd slurmctld slurmd; do
    alive "$d" || { err "$d is not running; use: $0 restart"; return 1; }
  done
  T0=$(date +%s.%N)
  err "slurmrestd does not answer on 127.0.0.1:$REST_PORT; restarting it"
  local p
  p=$(pid_of slurmrestd)
  if is_ours "$p"; then kill -CONT "$p" 2>/dev/null || true; fi
  stop_pids 2 "$p"
  start_restd
  if ! wait_until slurmrestd 30 rest_ping; then
    err "slurmrestd still does not answer"
    tail -n 20 "$DIR/log/slurmrestd.stdout" >&2
    return 1
  fi
  step "slurmrestd restarted and answers"
}

cmd_env() {
  printf 'export SLURM_LOCAL_DIR=%q\n' "$DIR"
  printf 'export SLURM_CONF=%q\n' "$DIR/etc/slurm.conf"
  printf 'export SLURMRESTD_URL=%q\n' "http://127.0.0.1:$REST_PORT"
  printf 'export SLURM_JWT_FILE=%q\n' "$DIR/token"
  printf 'export SLURM_USER=%q\n' "$JOB_USER"
  printf 'export SLURM_REST_API_VERSION=%q\n' "$API"
  printf 'export SLURM_PARTITION=%q\n' "$PARTITION"
  printf 'export SLURM_JOBS_DIR=%q\n' "$DIR/jobs"
}

# Sourced (by tests/tools/slurm_local_is_ours_test.sh): the functions only, no command.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  check) cmd_check ;;
  env) cmd_env ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 64 ;;
esac
