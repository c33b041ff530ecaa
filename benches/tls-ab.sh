#!/usr/bin/env bash
# A/B of TLS produce cost, builds/configs alternated in one run.
# usage: bash benches/tls-ab.sh LOAD_BIN ROUNDS NAME=BROKER_BIN[=extra.prop:value;...] ...
# Per round and variant: a fresh broker (PLAINTEXT + SSL listener, /metrics), warm-up, then
# N records of SIZE bytes produced on PLAINTEXT and SSL (order alternating by round, `sync` before
# each run); prints broker CPU and the Produce
# request count (delta of kafka_network_requestmetrics_requests_total{request="Produce"}).
# RATE=R paces both listeners at R records/s (the load tool's --rate): CPU per record at the same
# offered load, so that the slower SSL client does not leave the broker idle longer between requests.
set -euo pipefail
LOAD=$1; ROUNDS=$2; shift 2
SIZE=${SIZE:-1024}; N=${N:-300000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
PKI=$(mktemp -d)
( cd "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=josef-load-ca" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out server.crt 2>/dev/null
  cat server.key server.crt > server.pem )
JPID=""
trap '[ -n "$JPID" ] && kill $JPID 2>/dev/null; rm -rf "$PKI"' EXIT
produce_reqs() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk '/^kafka_network_requestmetrics_requests_total\{/ && /request="Produce"/ {s+=$NF} END {print s+0}'; }
for r in $(seq 1 $ROUNDS); do
  for v in "$@"; do
    NAME=${v%%=*}; REST=${v#*=}; BIN=${REST%%=*}; EXTRA=""; [ "$REST" != "$BIN" ] && EXTRA=${REST#*=}
    DATA=$(mktemp -d); PPORT=$(free_port); SPORT=$(free_port); MPORT=$(free_port)
    cat > "$DATA/server.properties" <<EOP
node.id=1
listeners=PLAINTEXT://127.0.0.1:$PPORT,SSL://127.0.0.1:$SPORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL
log.dirs=$DATA/logs
ssl.keystore.type=PEM
ssl.keystore.location=$PKI/server.pem
prometheus.listener=127.0.0.1:$MPORT
EOP
    [ -n "$EXTRA" ] && echo "$EXTRA" | tr ';' '\n' | sed 's/:/=/' >> "$DATA/server.properties"
    "$BIN" --config "$DATA/server.properties" > "$DATA/broker.log" 2>&1 &
    JPID=$!
    wait_port "$PPORT"; wait_port "$SPORT"; wait_port "$MPORT"
    SSL_CONF=(--config security.protocol=SSL --config "ssl.ca.location=$PKI/ca.pem")
    "$LOAD" --bootstrap 127.0.0.1:$PPORT --broker-pid $JPID --label warmup produce --records 20000 > /dev/null
    "$LOAD" --bootstrap 127.0.0.1:$SPORT --broker-pid $JPID "${SSL_CONF[@]}" --label warmup produce --records 20000 > /dev/null
    # The listener measured first alternates by round, and dirty log pages are written back before
    # each run: otherwise the second run of a round pays for the first run's writeback in the
    # kernel's page-cache copy of its own log appends (seen as 3-5x SSL runs, 2026-12-04).
    ORDER="plain ssl"; [ $((r % 2)) = 0 ] && ORDER="ssl plain"
    for mode in $ORDER; do
      sync
      if [ $mode = plain ]; then PORT=$PPORT; X=(); else PORT=$SPORT; X=("${SSL_CONF[@]}"); fi
      q0=$(produce_reqs)
      out=$("$LOAD" --bootstrap 127.0.0.1:$PORT --broker-pid $JPID "${X[@]}" ${LOADX:-} --label "$mode" produce --records $N --size $SIZE ${RATE:+--rate $RATE})
      q1=$(produce_reqs)
      echo "ROUND=$r VARIANT=$NAME load=$(cut -d' ' -f1 /proc/loadavg) produce_requests=$((q1-q0)) $out"
    done
    echo "VARIANT=$NAME openssl s_client: $(echo | timeout 10 openssl s_client -connect 127.0.0.1:$SPORT -CAfile $PKI/ca.pem 2>/dev/null | grep -m1 'Cipher is' || true)"
    kill $JPID; wait $JPID 2>/dev/null || true; JPID=""
    rm -rf "$DATA"
  done
done
