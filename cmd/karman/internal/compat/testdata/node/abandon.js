'use strict';
// A SimpleConsumer receives until it has count distinct messages,
// acknowledges those whose bodies are listed in ack and leaves the others
// in flight; then it shuts down (NotifyClientTermination) or, with
// crash, exits without a word to the server.
//
// Parameters: topic, group, count, ack (bodies), invisibleMs (default
// 10 s), crash.
// Result: {received: [view + {leaseFrom}]}, where leaseFrom is when the
// receive that got the message was sent.

const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group && p.count > 0, 'topic, group and count are required');
  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter('*') ]]),
    awaitDuration: 2000,
  }));
  await consumer.startup();
  const ack = new Set(p.ack ?? []);
  const received = progress.received = [];
  const bodies = new Set();
  while (bodies.size < p.count) {
    const leaseFrom = Date.now();
    for (const m of await consumer.receive(32, p.invisibleMs ?? 10000)) {
      const v = view(m);
      received.push({ ...v, leaseFrom });
      bodies.add(v.body);
      if (ack.has(v.body)) await consumer.ack(m);
    }
  }
  if (!p.crash) await consumer.shutdown();
  return { received };
});
