#!/bin/bash
# replication.sh: what replication costs a producer, side by side in one
# run: a single broker, a sync master with one replica and an async master
# with one replica, each a separate "karman serve" process on loopback
# (the pairs joined by --ha-role master/replica, no controller), driven by
# the same "karman-bench produce" load in turn, the order rotated each
# round.
#
# Each run prints msgs/s, p50/p99 and the brokers' CPU per message from
# /proc/PID/stat (utime + stime; "cpu_us" the master's, "group_cpu_us"
# master and replica together) and the load generator's ("gen_cpu_us",
# from the shell's times). At the end: the median of each system over
# the rounds, the ratios sync/single and async/single, and the ratios
# the CPU alone allows when every process shares the same cores and
# they are the bound: (gen + single) / (gen + group), medians.
#
# Binaries in $BIN (default ./bin: karman and karman-bench). Knobs, with
# their defaults: ROUNDS=3 COUNT=60000 PRODUCERS=16 SIZE=1024
# INFLIGHT=1 FLUSH=async PIN=0. PIN=1 runs each replica on CPU 1 and
# everything else (the single broker, the masters, the load generator)
# on CPU 0, as if each replica had a machine of its own: the ratios then
# say what replication costs the master, not what the replica takes from
# the cores it shares with it (needs taskset and 2 CPUs). Ports are picked by the kernel (":0") and read
# from the processes' announcements. Needs awk and sort.
set -euo pipefail
BIN=${BIN:-./bin}
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-60000}
PRODUCERS=${PRODUCERS:-16}
SIZE=${SIZE:-1024}
INFLIGHT=${INFLIGHT:-1}
FLUSH=${FLUSH:-async}
PIN=${PIN:-0}
GENPIN=()
[ "$PIN" = 1 ] && GENPIN=(taskset -c 0)
DIR=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

OFF=(--http-addr off --grpc-addr off --mqtt-addr off --mqtt-ws-addr off --mqtt-tls-addr off)

# start NAME ARGS...: runs karman serve with data and log under $DIR/NAME
# and waits for "karman: ready"; its pid goes to $DIR/NAME.pid.
start() {
  local name=$1 pin=()
  shift
  if [ "$PIN" = 1 ]; then
    case $name in
    *-replica) pin=(taskset -c 1) ;;
    *) pin=(taskset -c 0) ;;
    esac
  fi
  : >"$DIR/$name.log"
  "${pin[@]}" "$BIN/karman" serve --data "$DIR/$name" --flush "$FLUSH" "${OFF[@]}" --log-level info "$@" >"$DIR/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  echo "$pid" >"$DIR/$name.pid"
  for _ in $(seq 300); do
    grep -q '^karman: ready' "$DIR/$name.log" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "replication.sh: $name did not start:" >&2
  tail -20 "$DIR/$name.log" >&2
  exit 1
}
# announced NAME LISTENER: the address the process announced.
announced() { sed -n "s/^karman: $2 listening on //p" "$DIR/$1.log" | head -1; }
# haaddr NAME: the address a master serves its replicas on.
haaddr() { sed -n 's/.*ha: serving replicas.* addr=\([^ ]*\).*/\1/p' "$DIR/$1.log" | head -1; }

start single --namesrv-addr 127.0.0.1:0 --broker-addr 127.0.0.1:0 --broker-name single
# pair MODE: a master (with its own name server) and its replica.
pair() {
  local mode=$1
  start "$mode-master" --namesrv-addr 127.0.0.1:0 --broker-addr 127.0.0.1:0 --broker-name "$mode" \
    --ha-role master --ha-addr 127.0.0.1:0 --ha-replication "$mode"
  start "$mode-replica" --namesrv-addr off --broker-addr 127.0.0.1:0 --broker-name "$mode" \
    --broker-namesrv "$(announced "$mode-master" namesrv)" --ha-role replica --ha-master "$(haaddr "$mode-master")"
  # A sync master acknowledges nothing until its replica is in sync: wait
  # for the replica to have said hello.
  for _ in $(seq 100); do
    grep -q 'ha: replica connected' "$DIR/$mode-master.log" && return 0
    sleep 0.1
  done
  echo "replication.sh: no replica reached the $mode master" >&2
  exit 1
}
pair sync
pair async

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; } # 1/100 s
# childcpu VAR: sets VAR to the seconds of CPU (user + system) this
# shell's finished children used, from the second line of "times"
# ("0m1.250s 0m0.310s"), which runs in this shell, not a subshell.
childcpu() {
  times >"$DIR/times"
  printf -v "$1" '%s' "$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }; print t }' "$DIR/times")"
}
HZ=$(getconf CLK_TCK)

# measure SYSTEM: one produce run against it; prints a result line.
measure() {
  local sys=$1 ns master replica=""
  if [ "$sys" = single ]; then
    ns=$(announced single namesrv)
    master=$(cat "$DIR/single.pid")
  else
    ns=$(announced "$sys-master" namesrv)
    master=$(cat "$DIR/$sys-master.pid")
    replica=$(cat "$DIR/$sys-replica.pid")
  fi
  local m0 r0=0 m1 r1=0 g0 g1
  m0=$(ticks "$master")
  [ -n "$replica" ] && r0=$(ticks "$replica")
  childcpu g0
  "${GENPIN[@]}" "$BIN/karman-bench" produce --addr "$ns" --count "$COUNT" --producers "$PRODUCERS" \
    --size "$SIZE" --inflight "$INFLIGHT" --json >"$DIR/bench.out" 2>"$DIR/bench.err" || {
    cat "$DIR/bench.err" >&2
    exit 1
  }
  childcpu g1
  m1=$(ticks "$master")
  [ -n "$replica" ] && r1=$(ticks "$replica")
  awk -v sys="$sys" -v n="$COUNT" -v hz="$HZ" -v m=$((m1 - m0)) -v r=$((r1 - r0)) -v g="$(awk -v a="$g0" -v b="$g1" 'BEGIN { print b - a }')" '
    /"msgs_per_sec"/ {
      match($0, /"msgs_per_sec":[0-9.]+/); rate = substr($0, RSTART + 15, RLENGTH - 15)
      match($0, /"p50_us":[0-9.]+/); p50 = substr($0, RSTART + 9, RLENGTH - 9)
      match($0, /"p99_us":[0-9.]+/); p99 = substr($0, RSTART + 9, RLENGTH - 9)
      printf "%-7s msgs_per_sec %9.0f p50_us %7.0f p99_us %7.0f cpu_us %6.1f group_cpu_us %6.1f gen_cpu_us %6.1f\n",
        sys, rate, p50, p99, m * 1e6 / hz / n, (m + r) * 1e6 / hz / n, g * 1e6 / n
    }' "$DIR/bench.out"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores, pinned: $PIN; $ROUNDS rounds of $COUNT messages of $SIZE bytes, $PRODUCERS producers, inflight $INFLIGHT, flush $FLUSH"
SYSTEMS=(single sync async)
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do
    measure "${SYSTEMS[$(((i + r) % ${#SYSTEMS[@]}))]}" | tee -a "$DIR/results"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# median SYSTEM FIELD: the median of a field over the rounds.
median() {
  awk -v s="$1" -v f="$2" '$1 == s { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$DIR/results" |
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "medians:"
for s in "${SYSTEMS[@]}"; do
  printf "%-7s msgs_per_sec %9.0f p50_us %7.0f p99_us %7.0f cpu_us %6.1f group_cpu_us %6.1f gen_cpu_us %6.1f\n" "$s" \
    "$(median "$s" msgs_per_sec)" "$(median "$s" p50_us)" "$(median "$s" p99_us)" "$(median "$s" cpu_us)" "$(median "$s" group_cpu_us)" "$(median "$s" gen_cpu_us)"
done
single=$(median single msgs_per_sec)
awk -v a="$(median sync msgs_per_sec)" -v b="$(median async msgs_per_sec)" -v s="$single" \
  'BEGIN { printf "ratios: sync/single %.2f (goal 0.70), async/single %.2f (goal 0.90)\n", a / s, b / s }'
awk -v g="$(median single gen_cpu_us)" -v s="$(median single group_cpu_us)" -v a="$(median sync group_cpu_us)" -v b="$(median async group_cpu_us)" \
  'BEGIN { printf "CPU-bound ceilings (gen + single) / (gen + group): sync %.2f, async %.2f\n", (g + s) / (g + a), (g + s) / (g + b) }'
