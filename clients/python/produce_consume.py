"""Produce records, then read a topic to its end in a consumer group.

Driven by clients/python_test.go with kafka-python 2.0.2 (Debian's
python3-kafka). It prints one JSON object on stdout: what was produced
(partition and offset of each record, as the broker acknowledged it), what
the group consumer read, and the offsets the group committed, so that the
Go test can check all three against the broker.

usage: produce_consume.py BOOTSTRAP TOPIC GROUP PREFIX COUNT
"""

import json
import logging
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def produce(bootstrap, topic, prefix, count):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    futures = []
    for i in range(count):
        key = ("%s-key-%d" % (prefix, i)).encode()
        value = ("%s-value-%d" % (prefix, i)).encode()
        futures.append((key, value, producer.send(topic, key=key, value=value)))
    produced = []
    for key, value, future in futures:
        md = future.get(timeout=15)
        produced.append({"partition": md.partition, "offset": md.offset,
                         "key": key.decode(), "value": value.decode()})
    producer.close(timeout=10)
    return produced


def consume(bootstrap, topic, group, deadline):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=True,
        auto_offset_reset="earliest",
        # The group is joined by one member at a time; short timeouts keep
        # a broken rebalance from hiding behind kafka-python's defaults.
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
        fetch_max_wait_ms=100,
    )
    consumer.subscribe([topic])
    consumed = []
    done = False
    while not done:
        if time.monotonic() > deadline:
            raise SystemExit("timed out: consumed %d records, assignment %s"
                             % (len(consumed), consumer.assignment()))
        for tp, records in consumer.poll(timeout_ms=200).items():
            for r in records:
                consumed.append({"partition": r.partition, "offset": r.offset,
                                 "key": r.key.decode(), "value": r.value.decode()})
        assigned = consumer.assignment()
        if assigned:
            # The end is fixed: this process produced before consuming and
            # nobody else writes to the topic.
            ends = consumer.end_offsets(list(assigned))
            done = all(consumer.position(tp) >= ends[tp] for tp in assigned)
    # close() commits the positions: auto-commit's final commit.
    consumer.close(autocommit=True)
    return consumed


def committed(bootstrap, topic, group):
    # A consumer that never subscribes only reads the group's offsets.
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                           enable_auto_commit=False)
    out = {}
    for p in sorted(reader.partitions_for_topic(topic) or []):
        out[str(p)] = reader.committed(TopicPartition(topic, p))
    reader.close(autocommit=False)
    return out


def main():
    bootstrap, topic, group, prefix, count = sys.argv[1:6]
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    deadline = time.monotonic() + 30
    produced = produce(bootstrap, topic, prefix, int(count))
    consumed = consume(bootstrap, topic, group, deadline)
    json.dump({"produced": produced, "consumed": consumed,
               "committed": committed(bootstrap, topic, group)}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
