#!/bin/bash
# console-cpu.sh: what the web console costs a loaded broker, in CPU time
# of the broker process (utime + stime from /proc/PID/stat).
#
# It starts "karman serve" (binaries in $BIN, default ./bin: karman and
# karman-bench), makes topic bench and three groups lagging in it, loads
# it with "karman-bench produce" (300,000 1 KiB messages, 4 producers)
# for the broker's CPU per message and per second under load, then, in
# three rounds, measures the broker's CPU over 10 s idle and over 1,000
# cycles of the API requests the console's pages poll (overview, topics,
# groups, a group, its dead letters). The share of a page is the cost of
# its polls per second over the broker's CPU per second under load.
# Needs curl, bc and awk; ports from $PORT_BASE (default 18000) up.
set -euo pipefail
BIN=${BIN:-./bin}
P=${PORT_BASE:-18000}
DATA=$(mktemp -d)
LOG=$DATA.log
"$BIN/karman" serve --data "$DATA" --http-addr 127.0.0.1:$P --namesrv-addr 127.0.0.1:$((P+1)) --broker-addr 127.0.0.1:$((P+2)) \
  --grpc-addr off --mqtt-addr off --mqtt-ws-addr off --mqtt-tls-addr off --log-level warn >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$LOG"' EXIT
for _ in $(seq 100); do grep -q "karman: ready" "$LOG" && break; sleep 0.1; done
NS=127.0.0.1:$((P+1))
API=http://127.0.0.1:$P/api/v1
"$BIN/karman" admin --namesrv $NS topic create bench --queues 8 >/dev/null
for g in readers audit billing; do
  "$BIN/karman" admin --namesrv $NS group create $g >/dev/null
  "$BIN/karman" admin --namesrv $NS offset reset $g bench --to-time -1h >/dev/null 2>&1
done
ticks() { awk '{print $14+$15}' /proc/$PID/stat; } # 1/100 s
N=300000
t0=$(ticks); s0=$(date +%s.%N)
"$BIN/karman-bench" produce --addr $NS --topic bench --count $N --producers 4 --size 1024 --json 2>/dev/null | grep -o '"msgs_per_sec":[0-9.]*'
t1=$(ticks); s1=$(date +%s.%N)
echo "load: broker cpu $(( (t1-t0)*10 )) ms in $(echo "$s1 - $s0" | bc) s: $(echo "scale=1; ($t1-$t0)*10000/$N" | bc) us per message, $(echo "scale=0; ($t1-$t0)*10/($s1 - $s0)" | bc) ms per s"
for round in 1 2 3; do
  t0=$(ticks); sleep 10; t1=$(ticks)
  echo "round $round: idle 10 s: broker cpu $(( (t1-t0)*10 )) ms"
  C=1000; t0=$(ticks); s0=$(date +%s.%N)
  for _ in $(seq $C); do
    curl -s $API/overview $API/topics $API/groups $API/groups/readers "$API/groups/readers/dead-letters?count=100" >/dev/null
  done
  t1=$(ticks); s1=$(date +%s.%N)
  echo "round $round: $C cycles: broker cpu $(( (t1-t0)*10 )) ms in $(echo "$s1 - $s0" | bc) s: $(echo "scale=2; ($t1-$t0)*10/$C" | bc) ms per cycle"
done
