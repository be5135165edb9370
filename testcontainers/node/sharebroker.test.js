// sharebroker's image from Node.js: the testcontainers package starts it
// (GenericContainer, waiting for the image's own HEALTHCHECK), kafkajs
// produces and consumes through it. .ci/container-test.sh runs it with
// SHAREBROKER_CONTAINER_IMAGE naming the image built from this tree; without
// it the test skips.
//
// The container uses the host's network on free loopback ports: CI's Docker
// daemon has no bridge network. With one, publish the ports instead
// (.withExposedPorts({container: 9092, host: 9092})) and keep
// SHAREBROKER_ADVERTISE equal to the address clients dial.
// No image can be pulled where this runs, so testcontainers' reaper
// container (testcontainers/ryuk) is off and the test stops its own
// container. The container is on the host's network, so the host clients
// reach is 127.0.0.1; saying so spares testcontainers looking for the
// default bridge network's gateway, which CI's daemon does not have.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= "true";
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= "127.0.0.1";
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= "1";

const { test } = require("node:test");
const assert = require("node:assert/strict");
const net = require("node:net");
const { GenericContainer, Wait } = require("testcontainers");
const { Kafka, logLevel } = require("kafkajs");

const image = process.env.SHAREBROKER_CONTAINER_IMAGE;

// freePort asks the kernel for a port on 127.0.0.1 that is free now.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

test("kafkajs produces and consumes through the container", { skip: !image && "SHAREBROKER_CONTAINER_IMAGE is not set", timeout: 120000 }, async () => {
  const kafkaPort = await freePort();
  const httpPort = await freePort();
  const container = await new GenericContainer(image)
    .withNetworkMode("host")
    .withEnvironment({
      SHAREBROKER_LISTEN: `127.0.0.1:${kafkaPort}`,
      SHAREBROKER_HTTP: `127.0.0.1:${httpPort}`,
    })
    // The image's HEALTHCHECK (`sharebroker healthcheck`, asking /readyz),
    // probed every second instead of every 10 s.
    .withHealthCheck({
      test: ["CMD", "/sharebroker", "healthcheck"],
      interval: 1000,
      timeout: 3000,
      retries: 30,
      startPeriod: 1000,
    })
    .withWaitStrategy(Wait.forHealthCheck())
    .withStartupTimeout(60000)
    .start();
  const kafka = new Kafka({
    clientId: "tc-node",
    brokers: [`127.0.0.1:${kafkaPort}`],
    logLevel: logLevel.WARN,
    retry: { retries: 5 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  const consumer = kafka.consumer({ groupId: "tc-node-group" });
  try {
    const topic = "tc-node";
    await producer.connect();
    const values = ["a", "b", "c", "d", "e"];
    await producer.send({ topic, messages: values.map((value) => ({ value })) });

    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const seen = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`consumed ${JSON.stringify(seen)} within 60 s`)), 60000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push(message.value.toString());
            if (seen.length === values.length) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    assert.deepEqual(seen, values);
  } finally {
    await consumer.disconnect().catch(() => {});
    await producer.disconnect().catch(() => {});
    await container.stop();
  }
});
