"""A consume-transform-produce app with exactly-once semantics (value -> 2*value), used by the tests.

Usage: eos_app.py BOOTSTRAP SRC DST GROUP TXID (--crash-after N | --until N)
With --crash-after it exits abruptly (os._exit(17), like a crash) in the middle of a transaction after
N records were committed; with --until it stops once it has committed input offset N."""
import os
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def main():
    bootstrap, src, dst, group, txid, mode, n = sys.argv[1:8]
    n = int(n)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         # The crashed run's member holds its partitions until its session expires.
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 1})
    producer.init_transactions(30)
    consumer.subscribe([src])
    committed = 0
    idle = 0
    while True:
        msgs = consumer.consume(num_messages=10, timeout=1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            idle += 1
            if idle > 120:
                sys.exit("no input for 120 s")
            continue
        idle = 0
        producer.begin_transaction()
        for m in msgs:
            producer.produce(dst, value=str(2 * int(m.value())).encode(), partition=0)
        if mode == "--crash-after" and committed >= n:
            producer.flush(10)
            os._exit(17)  # crash mid-transaction: produced but neither committed nor aborted
        offsets = [TopicPartition(m.topic(), m.partition(), m.offset() + 1) for m in msgs]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        committed += len(msgs)
        if mode == "--until" and max(m.offset() for m in msgs) + 1 >= n:
            break
    consumer.close()


if __name__ == "__main__":
    main()
