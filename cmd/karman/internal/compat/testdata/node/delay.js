'use strict';
// Delayed messages: a Producer sends "delay-<ms>" for each delay, and
// "recall-me" (delayed by recallMs) which it recalls at once; a
// SimpleConsumer that was already receiving notes when each arrives, until
// every delay passed and recall-me's delivery time too.
//
// Parameters: topic (DELAY), group, delays [ms], recallMs.
// Result: {sent: [{body, id, deliverAt}], recall: "ok" or the error,
// received: [view]}.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  const { topic, group, delays, recallMs } = p;
  assert(topic && group && Array.isArray(delays) && recallMs > 0, 'topic, group, delays and recallMs are required');
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ] }));
  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: group,
    subscriptions: new Map([[ topic, filter('*') ]]),
    awaitDuration: 1000,
  }));
  await Promise.all([ producer.startup(), consumer.startup() ]);

  const sent = progress.sent = [];
  const send = async (body, delayMs) => {
    const deliveryTimestamp = new Date(Date.now() + delayMs);
    const receipt = await producer.send({ topic, body: Buffer.from(body), tag: 'delayed', deliveryTimestamp });
    sent.push({ body, id: receipt.messageId, deliverAt: deliveryTimestamp.getTime() });
    return receipt;
  };
  for (const ms of delays) await send(`delay-${ms}`, ms);
  const receipt = await send('recall-me', recallMs);
  let recall = 'ok';
  try {
    await producer.recallMessage(topic, receipt.recallHandle);
  } catch (err) {
    recall = `${err.name}: ${err.message}`;
  }

  const received = progress.received = [];
  const until = Math.max(...sent.map(s => s.deliverAt)) + 1000;
  while (received.filter(m => m.body.startsWith('delay-')).length < delays.length || Date.now() < until) {
    for (const m of await consumer.receive(16, 10000)) {
      received.push(view(m));
      await consumer.ack(m);
    }
  }
  await Promise.all([ producer.shutdown(), consumer.shutdown() ]);
  return { sent, recall, received };
});
