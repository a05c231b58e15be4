'use strict';
// A Producer and a SimpleConsumer keep working while the server restarts:
// they send and receive count messages, print "restart me" on a line of
// its own, then send and receive count more, retrying every failed call
// until the server is back.
//
// Parameters: topic, group, count.
// Result: {received: [body], failures: n}: every distinct body received
// (each acknowledged), and how many calls failed meanwhile.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, progress, run } = require('./lib');

const pause = ms => new Promise(resolve => setTimeout(resolve, ms));

run(async (endpoint, p) => {
  assert(p.topic && p.group && p.count > 0, 'topic, group and count are required');
  const producer = new Producer(clientOptions(endpoint, { topics: [ p.topic ] }));
  await producer.startup();
  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter('*') ]]),
    awaitDuration: 2000,
  }));
  await consumer.startup();
  const received = progress.received = new Set();
  let failures = 0;
  const retrying = async call => {
    for (;;) {
      try {
        return await call();
      } catch (err) {
        failures++;
        progress.lastFailure = String(err && err.message);
        await pause(200);
      }
    }
  };
  const phase = async (from, to) => {
    for (let i = from; i < to; i++) {
      await retrying(() => producer.send({ topic: p.topic, body: Buffer.from(`ride-${i}`) }));
    }
    while (received.size < to) {
      for (const m of await retrying(() => consumer.receive(32, 10000))) {
        received.add(m.body.toString('utf8'));
        // An acknowledgement is not retried: a message whose
        // acknowledgement is lost comes back and counts once.
        await consumer.ack(m).catch(() => { failures++; });
      }
    }
  };
  await phase(0, p.count);
  process.stdout.write('restart me\n');
  await phase(p.count, 2 * p.count);
  // Shutting down tells the server the client leaves, which is best
  // effort: a connection the restart broke may still be waiting to
  // reconnect, and the client then fails that call at once.
  const shutdown = client => client.shutdown().catch(err => {
    failures++;
    progress.lastFailure = `shutdown: ${err && err.message}`;
  });
  await shutdown(consumer);
  await shutdown(producer);
  return { received: [ ...received ], failures };
});
