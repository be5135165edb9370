"""Authenticate with SASL, produce records, and read them back.

Driven by clients/python_test.go with kafka-python 2.0.2 (Debian's
python3-kafka) over a SASL_PLAINTEXT listener. It prints one JSON object on
stdout: the values read back, in offset order. A failed authentication
exits 2 with the error on stderr.

usage: sasl.py BOOTSTRAP TOPIC MECHANISM USER PASSWORD
"""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError


def main():
    bootstrap, topic, mechanism, user, password = sys.argv[1:6]
    security = dict(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    try:
        producer = KafkaProducer(acks="all", **security)
    except KafkaError as e:
        print("authentication failed: %r" % e, file=sys.stderr)
        sys.exit(2)
    values = ["one", "two", "three"]
    for v in values:
        producer.send(topic, value=v.encode()).get(timeout=15)
    producer.close(timeout=10)

    consumer = KafkaConsumer(consumer_timeout_ms=10000, fetch_max_wait_ms=100, **security)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    read = []
    for msg in consumer:
        read.append(msg.value.decode())
        if len(read) == len(values):
            break
    consumer.close()
    json.dump({"read": read}, sys.stdout)


if __name__ == "__main__":
    main()
