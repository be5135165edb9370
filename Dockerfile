# sharebroker in a container: a static binary on scratch, run as a non-root
# user. Build with `make docker`, which builds bin/sharebroker first
# (CGO_ENABLED=0) and copies it in, so building the image pulls nothing.
#
#   docker run -p 9092:9092 -p 9644:9644 \
#     -e SHAREBROKER_ADVERTISE=localhost:9092 sharebroker
#
# Flags come from SHAREBROKER_<FLAG> variables (or arguments after the image
# name); Kafka properties from SHAREBROKER_CONFIG_<PROPERTY>, dots as
# underscores: SHAREBROKER_CONFIG_NUM_PARTITIONS=3.
#
# Data survives a recreated container with a volume named by
# SHAREBROKER_DATA_DIR (--data-dir; docs/durability.md), writable by the
# image's user 65532:
#
#   docker run -v sharebroker-data:/data -e SHAREBROKER_DATA_DIR=/data ...
#
# The image holds an empty /data owned by 65532, so a new named volume
# mounted there starts with that owner (Docker copies it in); a directory
# bind-mounted there must be writable by 65532 itself. Without the
# variable everything is kept in memory. The image declares no VOLUME, so
# an in-memory broker creates no anonymous volume.
FROM scratch
COPY bin/sharebroker /sharebroker
# bin/image-data is an empty directory `make image-context` makes.
COPY --chown=65532:65532 bin/image-data /data
# bin/image-tmp is an empty directory that becomes a /tmp the image's user
# may write: compose files written for apache/kafka keep their data in
# /tmp/kraft-combined-logs (KAFKA_LOG_DIRS, the data directory here).
COPY --chown=65532:65532 bin/image-tmp /tmp
USER 65532:65532
# All interfaces inside the container. Clients outside it must be told an
# address they can reach: set SHAREBROKER_ADVERTISE (--advertise) to the
# published host:port.
ENV SHAREBROKER_LISTEN=0.0.0.0:9092 \
    SHAREBROKER_HTTP=0.0.0.0:9644
# The apache/kafka image's environment: KAFKA_* variables, CLUSTER_ID and
# the file input in /mnt/shared/config (docs/kafka-env.md).
# SHAREBROKER_KAFKA_ENV=false turns it off.
ENV SHAREBROKER_KAFKA_ENV=true
EXPOSE 9092 9644
HEALTHCHECK --interval=10s --timeout=3s --start-period=2s --retries=3 \
    CMD ["/sharebroker", "healthcheck"]
ENTRYPOINT ["/sharebroker"]
CMD ["serve"]
