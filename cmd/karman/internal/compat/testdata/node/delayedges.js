'use strict';
// Delayed messages at the edges, to a PushConsumer that starts first:
//
//	past        delivery time 5 s ago: sent, and delivered at once
//	far         delivery time farMs ahead: refused or sent, as the
//	            server decides (the result says)
//	twice       delay 3 s, recalled, then recalled again
//	late        delay 500 ms, recalled once it was consumed
//	elsewhere   delay 3 s, recalled naming another topic (otherTopic),
//	            then naming its own
//	last        delay 4 s: once consumed (and lingerMs after), the
//	            scenario ends
//
// Parameters: topic (DELAY), otherTopic, group, farMs, lingerMs.
// Result: {sent: [{body, id, deliverAt, sentAt, error}], recalls: [{body,
// what, error: {message, code} or null}], deliveries: [view]}.

const { setTimeout } = require('node:timers/promises');
const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

const describe = err => ({ message: `${err.name}: ${err.message}`, code: err.code ?? null });

run(async (endpoint, p) => {
  const { topic, otherTopic, group } = p;
  assert(topic && otherTopic && group && p.farMs > 0, 'topic, otherTopic, group and farMs are required');
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
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic, otherTopic ] }));
  await Promise.all([ producer.startup(), consumer.startup() ]);

  const sent = progress.sent = [];
  const send = async (body, delayMs) => {
    const sentAt = Date.now();
    const deliveryTimestamp = new Date(sentAt + delayMs);
    const s = { body, deliverAt: deliveryTimestamp.getTime(), sentAt, error: null };
    sent.push(s);
    try {
      const receipt = await producer.send({ topic, body: Buffer.from(body), tag: 'edge', deliveryTimestamp });
      s.id = receipt.messageId;
      return receipt;
    } catch (err) {
      s.error = describe(err);
      return null;
    }
  };
  const recalls = progress.recalls = [];
  const recall = async (body, what, t, handle) => {
    const r = { body, what, error: null };
    try {
      await producer.recallMessage(t, handle);
    } catch (err) {
      r.error = describe(err);
    }
    recalls.push(r);
  };

  await send('past', -5000);
  await send('far', p.farMs);
  const twice = await send('twice', 3000);
  await recall('twice', 'first', topic, twice.recallHandle);
  await recall('twice', 'second', topic, twice.recallHandle);
  const elsewhere = await send('elsewhere', 3000);
  await recall('elsewhere', 'other topic', otherTopic, elsewhere.recallHandle);
  await recall('elsewhere', 'own topic', topic, elsewhere.recallHandle);
  const late = await send('late', 500);
  await inbox.until('late to be consumed', 20000, items => items.some(m => m.body === 'late'));
  await recall('late', 'after delivery', topic, late.recallHandle);
  await send('last', 4000);
  await inbox.until('last to be consumed', 30000, items => items.some(m => m.body === 'last'));
  await setTimeout(p.lingerMs ?? 0);
  return { sent, recalls, deliveries: inbox.items };
});
