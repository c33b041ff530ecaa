// kafkajs driver for the end-to-end tests. Reads one JSON command from argv[2], prints one JSON result.
// Bytes travel as base64 so the Python side can compare them byte-exact.
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs');
try {
  CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy');
} catch (e) { /* snappy optional */ }

const b64 = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('base64'));
const unb64 = (s) => (s === null || s === undefined ? null : Buffer.from(s, 'base64'));
const codec = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
};

async function main() {
  const cmd = JSON.parse(process.argv[2]);
  // Security, when asked: cmd.ssl = {ca, cert, key} (PEM file paths), cmd.sasl = {mechanism,
  // username, password} (kafkajs's names: plain, scram-sha-256, scram-sha-512).
  const fs = require('fs');
  const ssl = cmd.ssl ? {
    ca: [fs.readFileSync(cmd.ssl.ca, 'utf8')],
    ...(cmd.ssl.cert ? { cert: fs.readFileSync(cmd.ssl.cert, 'utf8'), key: fs.readFileSync(cmd.ssl.key, 'utf8') } : {}),
  } : undefined;
  const kafka = new Kafka({
    clientId: 'josef-e2e-kafkajs', brokers: [cmd.bootstrap], logLevel: logLevel.ERROR,
    retry: { retries: 8, initialRetryTime: 100 },
    ...(ssl ? { ssl } : {}),
    ...(cmd.sasl ? { sasl: cmd.sasl } : {}),
  });
  if (cmd.op === 'produce') {
    const producer = kafka.producer({ allowAutoTopicCreation: true, idempotent: !!cmd.idempotent });
    await producer.connect();
    const res = await producer.send({
      topic: cmd.topic, acks: cmd.acks === undefined ? -1 : cmd.acks,
      compression: codec[cmd.compression || 'none'],
      messages: cmd.messages.map((m) => ({
        key: unb64(m.key), value: unb64(m.value), partition: m.partition,
        headers: Object.fromEntries((m.headers || []).map(([k, v]) => [k, unb64(v)])),
        timestamp: m.timestamp === undefined ? undefined : String(m.timestamp),
      })),
    });
    await producer.disconnect();
    console.log(JSON.stringify({ ok: true, result: res }));
  } else if (cmd.op === 'consume') {
    // Reads `count` messages from the beginning of the topic with a group consumer.
    const consumer = kafka.consumer({ groupId: cmd.group, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic: cmd.topic, fromBeginning: true });
    const out = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timeout: got ${out.length} of ${cmd.count}`)), (cmd.timeout_s || 60) * 1000);
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push({
            partition, offset: Number(message.offset), key: b64(message.key), value: b64(message.value),
            headers: Object.entries(message.headers || {}).map(([k, v]) => [k, b64(v)]),
            timestamp: Number(message.timestamp),
          });
          if (out.length >= cmd.count) { clearTimeout(timer); resolve(); }
        },
      }).catch(reject);
    });
    await consumer.disconnect();
    console.log(JSON.stringify({ ok: true, messages: out }));
  } else if (cmd.op === 'metadata') {
    const admin = kafka.admin();
    await admin.connect();
    if (cmd.create) {
      await admin.createTopics({ topics: [{ topic: cmd.create, numPartitions: cmd.partitions || 1 }] });
    }
    const md = await admin.fetchTopicMetadata({ topics: cmd.topics || [] });
    await admin.disconnect();
    console.log(JSON.stringify({ ok: true, metadata: md }));
  } else {
    throw new Error('unknown op ' + cmd.op);
  }
}

main().then(() => process.exit(0)).catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e) }));
  process.exit(1);
});
