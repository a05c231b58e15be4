'use strict';
// The life of messages a SimpleConsumer receives (each with an invisible
// duration of invisibleMs), by their bodies:
//
//	ack-me     acknowledged at once: never seen again.
//	change-me  its invisible duration is cut to changeMs: it comes back
//	           (attempt 2) and is acknowledged then. Its first receipt
//	           handle, replaced by the change, is then used for an ack,
//	           which must not acknowledge the new lease.
//	lapse-me   left alone: it comes back once its invisible duration
//	           passed (attempt 2) and is acknowledged then.
//	extend-me  its invisible duration is extended to extendMs: it does not
//	           come back when its first lease ends (when lapse-me comes
//	           back), and the handle the change returned acknowledges it
//	           then.
//	expire-me  never acknowledged; on every delivery its invisible
//	           duration is cut to changeMs: it comes back with a growing
//	           delivery attempt until the group's max attempts, and then
//	           no more (it goes to the dead-letter topic, which the test
//	           reads).
//
// Parameters: topic, group, invisibleMs, changeMs, extendMs, maxAttempts.
// Result: {sent: [{body, id}], deliveries: [view + {leaseFrom, leaseMs}],
// staleAck, extendAck}, where staleAck and extendAck are "ok" or the error
// the ack raised, and each delivery's last lease started no earlier than
// leaseFrom (when the receive or change that set it was sent) and lasted
// leaseMs.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  const { topic, group, invisibleMs, changeMs, extendMs, maxAttempts } = p;
  assert(topic && group && invisibleMs > 0 && changeMs > 0 && extendMs > invisibleMs && maxAttempts > 1,
    'topic, group, invisibleMs, changeMs, extendMs > invisibleMs and maxAttempts are required');
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ] }));
  await producer.startup();
  const sent = progress.sent = [];
  for (const body of [ 'ack-me', 'change-me', 'lapse-me', 'extend-me', 'expire-me' ]) {
    const receipt = await producer.send({ topic, body: Buffer.from(body), tag: 'lifecycle' });
    sent.push({ body, id: receipt.messageId });
  }
  await producer.shutdown();

  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: group,
    subscriptions: new Map([[ topic, filter('lifecycle') ]]),
    awaitDuration: 1000,
  }));
  await consumer.startup();
  const deliveries = progress.deliveries = [];
  const receive = async () => {
    const leaseFrom = Date.now();
    const messages = await consumer.receive(16, invisibleMs);
    for (const m of messages) deliveries.push({ ...view(m), leaseFrom, leaseMs: invisibleMs });
    return messages;
  };
  const change = async (m, ms) => {
    const leaseFrom = Date.now();
    await consumer.changeInvisibleDuration(m, ms);
    const d = deliveries.findLast(d => d.body === m.body.toString());
    Object.assign(d, { leaseFrom, leaseMs: ms });
  };
  const ack = async m => {
    try {
      await consumer.ack(m);
      return 'ok';
    } catch (err) {
      return `${err.name}: ${err.message}`;
    }
  };

  // Everything arrives once first.
  const first = new Map();
  while (first.size < sent.length) {
    for (const m of await receive()) first.set(m.body.toString(), m);
  }
  assert.equal(await ack(first.get('ack-me')), 'ok', 'ack of ack-me');

  const changeMe = first.get('change-me');
  const staleHandle = changeMe.receiptHandle;
  await change(changeMe, changeMs);
  assert.notEqual(changeMe.receiptHandle, staleHandle, 'ChangeInvisibleDuration returns a new receipt handle');
  const staleAck = await ack({ endpoints: changeMe.endpoints, topic: changeMe.topic,
    messageId: changeMe.messageId, receiptHandle: staleHandle });

  const extendMe = first.get('extend-me');
  await change(extendMe, extendMs);
  await change(first.get('expire-me'), changeMs);

  // Then the redeliveries, until expire-me has had its attempts and one
  // more changed invisible time (plus a margin) has passed without it.
  let extendAck = null;
  let changedBack = false;
  let lastExpire = null;
  for (;;) {
    if (changedBack && extendAck !== null && lastExpire && lastExpire.attempt >= maxAttempts &&
        Date.now() > lastExpire.receivedAt + changeMs + 1500) {
      break;
    }
    for (const m of await receive()) {
      const body = m.body.toString();
      if (body === 'expire-me') {
        lastExpire = deliveries[deliveries.length - 1];
        await change(m, changeMs);
        continue;
      }
      if (body === 'change-me') changedBack = true;
      // The first lease of extend-me has ended by now.
      if (body === 'lapse-me') extendAck = await ack(extendMe);
      await ack(m);
    }
  }
  await consumer.shutdown();
  return { sent, deliveries, staleAck, extendAck };
});
