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
# second. Per run it prints the p50 latency, msgs/s, and the CPU time per
# message of the broker (from /proc/PID/stat) and of the load generator.
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
PIN_S=${PIN_S:-taskset -c 0} PIN_C=${PIN_C:-taskset -c 1}
D=$(mktemp -d /dev/shm/karman-pinned.XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
start() { # name extra-flags...
  local n=$1; shift
  $PIN_S "$K" serve --data "$D/$n" --http-addr off --mqtt-addr off --mqtt-ws-addr off --mqtt-tls-addr off --grpc-addr off \
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
for r in $(seq "$RUNS"); do
  # Each run starts with the next mode: every mode goes first as often.
  k=$(( (r - 1) % ${#modes[@]} ))
  order=("${modes[@]:k}" "${modes[@]:0:k}")
  for mode in "${order[@]}"; do
    srv=${mode%-signed}
    pid_var=${srv}_pid ns_var=${srv}_ns
    creds=(); [ "$mode" != off ] && creds=(--access-key bench --secret-key bench-secret)
    c0=$(cpu ${!pid_var})
    out=$(/usr/bin/time -f 'CLIENTCPU %U %S' $PIN_C "$KB" "$@" --addr "${!ns_var}" "${creds[@]}" --json 2>&1)
    c1=$(cpu ${!pid_var})
    ccpu=$(echo "$out" | awk '/^CLIENTCPU/{print $2+$3}')
    echo "$out" | grep '"system":"karman"' | head -1 | python3 -c '
import json,sys
m=json.loads(sys.stdin.read()); n=m.get("messages") or m.get("count")
print("run %2s auth %-10s p50-us %7.1f msgs/s %9.0f broker-cpu-us/msg %6.2f bench-process-cpu-us/msg %6.2f" % (sys.argv[1], sys.argv[2], m["p50_us"], m["msgs_per_sec"], (int(sys.argv[4])-int(sys.argv[3]))/int(sys.argv[5])*1e6/n, float(sys.argv[6])*1e6/n))' "$r" "$mode" "$c0" "$c1" "$hz" "$ccpu" | tee -a "$D/runs"
  done
done
python3 - "$D/runs" "${modes[@]}" <<'PY'
import statistics, sys
modes = sys.argv[2:]
runs = {m: [] for m in modes}
for line in open(sys.argv[1]):
    f = line.split()
    runs[f[3]].append((float(f[5]), float(f[7]), float(f[9]), float(f[11])))
med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in runs.items()}
for k in modes:
    print("median auth %-10s p50-us %7.1f msgs/s %9.0f broker-cpu-us/msg %6.2f bench-process-cpu-us/msg %6.2f" % (k, *med[k]))
base = med[modes[0]]
for k in modes[1:]:
    m = med[k]
    print("%s/%s: throughput %.2f, p50 %+.1f us, broker CPU per message %.2f (%s/%s), broker and generator CPU per message %.2f"
          % (k, modes[0], m[1] / base[1], m[0] - base[0], base[2] / m[2], modes[0], k, (base[2] + base[3]) / (m[2] + m[3])))
PY
