// Produce records with kafkajs, then read the topic to its end in a
// consumer group, committing what was read.
//
// Driven by clients/node_test.go. Prints one JSON object on stdout: the
// produced records (partition and offset as the broker acknowledged them),
// the records the group consumer read, and the group's committed offsets
// afterwards, for the Go test to check against the broker. Logs go to
// stderr so that stdout holds only the report.
//
// usage: node group.js BOOTSTRAP TOPIC GROUP PREFIX COUNT
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, groupId, prefix, countArg] = process.argv.slice(2)
const count = Number(countArg)

const kafka = new Kafka({
  clientId: 'sharebroker-node-test',
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  logCreator: () => ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`[${namespace}] ${level} ${message} ${JSON.stringify(extra)}\n`)
  },
  retry: { retries: 3, initialRetryTime: 100 }
})

async function produce () {
  const producer = kafka.producer()
  await producer.connect()
  const produced = []
  // One send per record so that each acknowledgement names its offset.
  for (let i = 0; i < count; i++) {
    const key = `${prefix}-key-${i}`
    const value = `${prefix}-value-${i}`
    const [md] = await producer.send({ topic, acks: -1, messages: [{ key, value }] })
    produced.push({ partition: md.partition, offset: Number(md.baseOffset), key, value })
  }
  await producer.disconnect()
  return produced
}

// groupOffsets returns the group's committed offset per partition, -1
// where it has none.
async function groupOffsets (admin) {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] })
  const out = {}
  for (const p of t.partitions) out[p.partition] = Number(p.offset)
  return out
}

async function consume (admin) {
  // The end is fixed: this process produced first and nobody else writes.
  const ends = {}
  for (const p of await admin.fetchTopicOffsets(topic)) ends[p.partition] = Number(p.high)
  // Where the group resumes: a partition with nothing new is done already.
  const next = await groupOffsets(admin)
  const done = () => Object.keys(ends).every((p) => ends[p] === 0 || (next[p] ?? -1) >= ends[p])

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const consumed = []
  let finish
  const finished = new Promise((resolve) => { finish = resolve })
  await consumer.run({
    // Commit after every batch, so that nothing read is left uncommitted
    // when the consumer stops.
    autoCommitThreshold: 1,
    eachMessage: async ({ partition, message }) => {
      consumed.push({ partition, offset: Number(message.offset), key: message.key.toString(), value: message.value.toString() })
      next[partition] = Number(message.offset) + 1
      if (done()) finish()
    }
  })
  if (!done()) {
    const timer = setTimeout(() => finish(new Error('timed out')), 30000)
    const err = await finished
    clearTimeout(timer)
    if (err) throw new Error(`consumed ${consumed.length} records, positions ${JSON.stringify(next)}, ends ${JSON.stringify(ends)}: ${err.message}`)
  }
  // disconnect waits for the running batch, commits it and leaves the group.
  await consumer.disconnect()
  return consumed
}

async function main () {
  const produced = await produce()
  const admin = kafka.admin()
  await admin.connect()
  const consumed = await consume(admin)
  const committed = await groupOffsets(admin)
  await admin.disconnect()
  process.stdout.write(JSON.stringify({ produced, consumed, committed }) + '\n')
}

main().catch((err) => {
  process.stderr.write(`group.js: ${err.stack || err}\n`)
  process.exit(1)
})
