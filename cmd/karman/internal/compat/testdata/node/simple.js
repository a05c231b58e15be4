'use strict';
// A SimpleConsumer receives and acknowledges messages until it has what
// it was asked for.
//
// Parameters:
//	topic, group  what to consume, as which consumer group
//	expression    filter expression (default "*"); sql: true for SQL92
//	count         stop once this many distinct bodies arrived, or
//	until         stop once a message with this body arrived
//	batch         messages per receive (default 32)
//	invisibleMs   invisible duration of received messages (default 10 s)
//
// Result: {received: [view]}, every delivery in arrival order.

const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group, 'topic and group are required');
  assert(p.count > 0 || p.until !== undefined, 'count or until is required');
  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter(p.expression, p.sql) ]]),
    awaitDuration: 2000,
  }));
  await consumer.startup();
  const received = progress.received = [];
  const bodies = new Set();
  const done = () => (p.until !== undefined ? bodies.has(p.until) : bodies.size >= p.count);
  while (!done()) {
    const messages = await consumer.receive(p.batch ?? 32, p.invisibleMs ?? 10000);
    for (const m of messages) {
      received.push(view(m));
      bodies.add(m.body.toString('utf8'));
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  return { received };
});
