'use strict';
// Many delayed messages and recalled ones, to a PushConsumer: the
// consumer starts first; the producer then sends "d-<i>" with delivery
// time now + delays[i], and "recall-<i>" with now + recallMs, each of
// which it recalls at once. The scenario ends once every d-<i> was
// consumed and the latest delivery time (recalled ones included) is
// lingerMs behind.
//
// Parameters: topic (DELAY), group, delays [ms], recalls (how many),
// recallMs, lingerMs.
// Result: {sent: [{body, id, deliverAt, sentAt}], recalls: ["ok" or the
// error], deliveries: [view + {consumer}]}.

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

run(async (endpoint, p) => {
  const { topic, group, delays } = p;
  assert(topic && group && Array.isArray(delays), 'topic, group and delays are required');
  const inbox = new Inbox();
  progress.deliveries = inbox.items;
  const consumer = new PushConsumer(clientOptions(endpoint, {
    consumerGroup: group,
    subscriptions: new Map([[ topic, filter('*') ]]),
    messageListener: {
      async consume(m) {
        inbox.push(view(m));
        return ConsumeResult.SUCCESS;
      },
    },
  }));
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ] }));
  await Promise.all([ producer.startup(), consumer.startup() ]);

  const sent = progress.sent = [];
  const send = async (body, delayMs) => {
    const sentAt = Date.now();
    const deliveryTimestamp = new Date(sentAt + delayMs);
    const receipt = await producer.send({ topic, body: Buffer.from(body), tag: 'delayed', deliveryTimestamp });
    sent.push({ body, id: receipt.messageId, deliverAt: deliveryTimestamp.getTime(), sentAt });
    return receipt;
  };
  const recalls = progress.recalls = [];
  for (let i = 0; i < (p.recalls ?? 0); i++) {
    const receipt = await send(`recall-${i}`, p.recallMs);
    try {
      await producer.recallMessage(topic, receipt.recallHandle);
      recalls.push('ok');
    } catch (err) {
      recalls.push(`${err.name}: ${err.message}`);
    }
  }
  await Promise.all(delays.map((ms, i) => send(`d-${i}`, ms)));

  const last = Math.max(...sent.map(s => s.deliverAt));
  const want = delays.map((_, i) => `d-${i}`);
  await inbox.until('every delayed message', (p.deadlineMs ?? 60000) - 5000,
    items => want.every(b => items.some(m => m.body === b)));
  const wait = last + (p.lingerMs ?? 0) - Date.now();
  if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait));
  return { sent, recalls, deliveries: inbox.items };
});
