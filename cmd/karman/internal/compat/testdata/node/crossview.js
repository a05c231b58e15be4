'use strict';
// A SimpleConsumer receives and acknowledges messages until it has the
// distinct bodies it was asked for, and reports of each delivery what
// lib.js's view does and the born host besides.
//
// Parameters:
//	topic, group  what to consume, as which consumer group
//	count         stop once this many distinct bodies arrived
//	invisibleMs   invisible duration of received messages (default 10 s)
//
// Result: {received: [view + {bornHost}]}, every delivery in arrival
// order.

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
  const received = progress.received = [];
  const bodies = new Set();
  while (bodies.size < p.count) {
    for (const m of await consumer.receive(32, p.invisibleMs ?? 10000)) {
      received.push({ ...view(m), bornHost: m.bornHost ?? null });
      bodies.add(m.body.toString('utf8'));
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  return { received };
});
