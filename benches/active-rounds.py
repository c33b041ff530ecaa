"""The active-partition rounds of `scale.py --curve active` one at a time, with the broker's
shutdown after them, and optionally `perf record` of one phase only (issue #22).

    python3 benches/active-rounds.py BROKER_BIN PARTITIONS RECORDS ROUNDS PERF_OUT PHASE

PHASE: r1 (perf on the first round, each partition's first writes), steady (rounds 2..),
shutdown (SIGTERM until exit), none (PERF_OUT ignored, pass -). Prints each round's wall time and
broker CPU per record, and the shutdown's wall time and CPU (from the exit's rusage).
perf runs at -F 499 and is stopped with SIGINT (SIGKILL after 10 s).
"""
import os, sys, time, signal, subprocess, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
binary, n, records, rounds, perfout, phase = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
root = tempfile.mkdtemp(prefix=f"josef-prof-{n}-"); data = os.path.join(root, "data"); os.makedirs(data)
broker = scale.Broker(binary, data, scale.free_port(), ())
perf = None
def perf_start(pid):
    global perf
    perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o", perfout],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
def perf_stop():
    global perf
    if perf is None: return
    perf.send_signal(signal.SIGINT)
    try: perf.wait(10)
    except subprocess.TimeoutExpired: perf.kill(); perf.wait()
    perf = None
try:
    broker.start(); scale.wait_serving(broker, 0, 300)
    admin = broker.admin(); tps, left, i, new = [], n, 0, []
    while left > 0:
        p = min(100, left); new.append(NewTopic(f"scale-{i:05d}", num_partitions=p, replication_factor=1))
        tps += [(f"scale-{i:05d}", k) for k in range(p)]; left, i = left - p, i + 1
    for b in range(0, len(new), 100):
        for f in admin.create_topics(new[b:b+100], operation_timeout=300).values(): f.result()
    scale.wait_serving(broker, n, 300)
    pid = broker.proc.pid
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "log_level": 0})
    value = b"x" * 100
    for r in range(1, rounds + 1):
        if (r == 1 and phase == "r1") or (r == 2 and phase == "steady"): perf_start(pid)
        c0, t0 = scale.cpu_seconds(pid), time.monotonic()
        for k in range(records):
            t, p = tps[k % n]
            while True:
                try: producer.produce(t, value, partition=p); break
                except BufferError: producer.poll(0.01)
        assert producer.flush(300) == 0
        print(f"n={n} round {r}: {time.monotonic()-t0:.2f} s, {(scale.cpu_seconds(pid)-c0)*1e6/records:.2f} us/rec", flush=True)
        if r == 1 and phase == "r1": perf_stop()
    perf_stop()
    if phase == "shutdown": perf_start(pid)
    del producer
    c0, t0 = scale.cpu_seconds(pid), time.monotonic()
    broker.proc.send_signal(signal.SIGTERM)
    _, status, ru = os.wait4(pid, 0)
    broker.proc.returncode = status
    print(f"n={n} shutdown: {time.monotonic()-t0:.2f} s, CPU {ru.ru_utime + ru.ru_stime - c0:.2f} s", flush=True)
finally:
    perf_stop()
    if broker.proc is not None and broker.proc.returncode is None and broker.proc.poll() is None:
        broker.proc.kill(); broker.proc.wait()
    subprocess.run(["rm", "-rf", root])
