#!/usr/bin/env bash
# auth-pinned.sh KARMAN KARMAN_BENCH RUNS BENCH-ARGS...
#
# Authentication's cost with the broker and the load generator on cores
# of their own: two karman servers on loopback ports chosen at run time,
# one without and one with --auth (a super user, the user "bench" with
# one policy allowing everything, and USERS other users of one policy
# each, 300 by default), pinned to core PIN_S (taskset -c 0); then RUNS
# times, alternating which goes first, karman-bench BENCH-ARGS against
# each, pinned to PIN_C (taskset -c 1), signing as "bench" against the
# second. Per run it prints the p50 and p99 latency, msgs/s, the CPU time
# per message of the broker (from /proc/PID/stat) and of the load
# generator, the broker's read and write system calls (/proc/PID/io) and
# context switches (every thread's /proc status) per message, the load
# generator's context switches per message, and the garbage collections
# of each (GODEBUG=gctrace=1).
# MODES (default "off on") chooses what each run compares, in turn
# first: off (unsigned, to the server without --auth), off-signed (signed
# frames to the server without --auth, which ignores the credentials) and
# on (signed, to the server with --auth). off against off-signed is the
# generator's signing alone, off-signed against on the broker's check
# alone. SIGN_BOTH=1 is MODES="off-signed on". Data lives in /dev/shm and is
# removed at the end.
#
#   go build ./cmd/karman && go build ./cmd/karman/karman-bench
#   bench/scripts/auth-pinned.sh ./karman ./karman-bench 7 produce --count 100000 --producers 4 --inflight 16
set -euo pipefail
K=$1 KB=$2 RUNS=$3; shift 3
PIN_S=${PIN_S-taskset -c 0} PIN_C=${PIN_C-taskset -c 1} # set empty: unpinned
D=$(mktemp -d /dev/shm/karman-pinned.XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
start() { # name extra-flags...
  local n=$1; shift
  GODEBUG=gctrace=1 $PIN_S "$K" serve --data "$D/$n" --http-addr off --mqtt-addr off --mqtt-ws-addr off --mqtt-tls-addr off --grpc-addr off \
    --namesrv-addr 127.0.0.1:0 --broker-addr 127.0.0.1:0 --log-level warn "$@" >"$D/$n.log" 2>&1 &
  pids+=($!); eval "${n}_pid=$!"
  for _ in $(seq 200); do grep -q 'karman: ready' "$D/$n.log" && break; sleep 0.05; done
  grep -q 'karman: ready' "$D/$n.log" || { echo "karman serve ($n) did not start:" >&2; cat "$D/$n.log" >&2; exit 1; }
  eval "${n}_ns=$(grep -o 'namesrv listening on [^ ]*' "$D/$n.log" | awk '{print $4}')"
}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
start off
start on --auth --auth-init-user admin --auth-init-secret admin-secret
export KARMAN_ACCESS_KEY=admin KARMAN_SECRET_KEY=admin-secret
"$K" admin --namesrv "$on_ns" user create bench --secret bench-secret >/dev/null
"$K" admin --namesrv "$on_ns" acl create bench --resource '*' --actions All --decision Allow >/dev/null
for i in $(seq 0 $(( ${USERS:-300} - 1 ))); do
  "$K" admin --namesrv "$on_ns" user create bench-user-$i --secret secret-$i >/dev/null
  "$K" admin --namesrv "$on_ns" acl create bench-user-$i --resource Topic:bench-topic-$i --actions Pub,Sub --decision Allow >/dev/null
done
unset KARMAN_ACCESS_KEY KARMAN_SECRET_KEY
hz=$(getconf CLK_TCK)
# The modes of a run: off (no credentials, the server without --auth),
# off-signed (the generator's signed frames to the server without
# --auth, which ignores them) and on (signed, to the server with --auth).
read -r -a modes <<<"${MODES:-$([ -n "${SIGN_BOTH:-}" ] && echo off-signed on || echo off on)}"
for m in "${modes[@]}"; do
  case $m in off|off-signed|on) ;; *) echo "auth-pinned.sh: mode $m: want off, off-signed or on" >&2; exit 2;; esac
done
stats() { # pid log: CPU ticks, read and write syscalls, context switches (all threads), GCs logged
  local io; io=$(cat /proc/$1/io)
  echo "$(cpu $1) $(echo "$io" | awk '/^syscr/{print $2}') $(echo "$io" | awk '/^syscw/{print $2}')" \
    "$(cat /proc/$1/task/*/status | awk '/ctxt_switches/{n+=$2} END{print n}') $(grep -c '^gc ' "$2" || true)"
}
for r in $(seq "$RUNS"); do
  # Each run starts with the next mode: every mode goes first as often.
  k=$(( (r - 1) % ${#modes[@]} ))
  order=("${modes[@]:k}" "${modes[@]:0:k}")
  for mode in "${order[@]}"; do
    srv=${mode%-signed}
    pid_var=${srv}_pid ns_var=${srv}_ns
    creds=(); [ "$mode" != off ] && creds=(--access-key bench --secret-key bench-secret)
    s0=$(stats ${!pid_var} "$D/$srv.log")
    out=$(GODEBUG=gctrace=1 /usr/bin/time -o "$D/time" -f '%U %S %w %c' $PIN_C "$KB" "$@" --addr "${!ns_var}" "${creds[@]}" --json 2>&1)
    s1=$(stats ${!pid_var} "$D/$srv.log")
    cl=$(awk '{print $1+$2, $3+$4}' "$D/time")
    gcs=$(echo "$out" | grep -c '^gc ' || true)
    echo "$out" | grep '"system":"karman"' | head -1 | python3 -c '
import json,sys
m=json.loads(sys.stdin.read()); n=m.get("messages") or m.get("count")
r, mode, s0, s1, hz, cl, gcs = sys.argv[1:]
s0, s1 = [float(x) for x in s0.split()], [float(x) for x in s1.split()]
d = [b - a for a, b in zip(s0, s1)]
ccpu, cctx = (float(x) for x in cl.split())
print("run %2s auth %-10s p50-us %7.1f p99-us %7.1f msgs/s %9.0f broker-cpu-us/msg %6.2f bench-process-cpu-us/msg %6.2f"
      " broker-reads/msg %5.2f broker-writes/msg %5.2f broker-ctxsw/msg %5.2f bench-ctxsw/msg %5.2f broker-gcs %3d bench-gcs %3d"
      % (r, mode, m["p50_us"], m["p99_us"], m["msgs_per_sec"], d[0]/int(hz)*1e6/n, ccpu*1e6/n,
         d[1]/n, d[2]/n, d[3]/n, cctx/n, d[4], int(gcs)))' "$r" "$mode" "$s0" "$s1" "$hz" "$cl" "$gcs" | tee -a "$D/runs"
  done
done
python3 - "$D/runs" "${modes[@]}" <<'PY'
import statistics, sys
modes = sys.argv[2:]
runs = {m: [] for m in modes}
keys = []
for line in open(sys.argv[1]):
    f = line.split()
    keys = f[4::2]
    runs[f[3]].append([float(x) for x in f[5::2]])
med = {k: [statistics.median(r[i] for r in v) for i in range(len(keys))] for k, v in runs.items()}
for k in modes:
    print("median auth %-10s " % k + " ".join("%s %.2f" % kv for kv in zip(keys, med[k])))
col = {k: i for i, k in enumerate(keys)}
base = med[modes[0]]
for k in modes[1:]:
    m = med[k]
    bc, gc = col["broker-cpu-us/msg"], col["bench-process-cpu-us/msg"]
    print("%s/%s: throughput %.2f, p50 %+.1f us, broker CPU per message %.2f (%s/%s), broker and generator CPU per message %.2f"
          % (k, modes[0], m[col["msgs/s"]] / base[col["msgs/s"]], m[col["p50-us"]] - base[col["p50-us"]],
             base[bc] / m[bc], modes[0], k, (base[bc] + base[gc]) / (m[bc] + m[gc])))
PY
