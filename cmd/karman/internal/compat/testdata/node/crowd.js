'use strict';
// SimpleConsumers of one group (each a client of its own) receive at the
// same time until the messages they acknowledged between them hold every
// wanted body; each receives with its own batch size and may hold what it
// received for a while before acknowledging it, so that the others
// receive while it has messages in flight.
//
// Parameters:
//	group          the consumer group
//	subscriptions  [{topic, expression?, sql?}]: what every consumer
//	               subscribes to, all at once
//	batches        the maxMessageNum of each consumer's receives; there are
//	               as many consumers as entries (default [32])
//	count          stop once this many distinct bodies were acknowledged
//	invisibleMs    invisible duration of received messages (default 10 s)
//	holdMs         how long a consumer holds a batch before acknowledging
//	               it (default 0)
//
// Result: {deliveries: [view + {consumer, batch, ackedAt, ack}],
// receives: [{consumer, topic, batchSize, got}]}; batch numbers a
// consumer's receives from 0, ack is "ok" or the error of the ack.

const { setTimeout } = require('node:timers/promises');
const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.group && Array.isArray(p.subscriptions) && p.count > 0, 'group, subscriptions and count are required');
  const subscriptions = new Map(p.subscriptions.map(s => [ s.topic, filter(s.expression, s.sql) ]));
  const batches = p.batches ?? [ 32 ];
  const consumers = batches.map(() => new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map(subscriptions),
    awaitDuration: 2000,
  })));
  await Promise.all(consumers.map(c => c.startup()));
  const deliveries = progress.deliveries = [];
  const receives = progress.receives = [];
  const acked = new Set();
  const done = () => acked.size >= p.count;
  const consume = async (consumer, index) => {
    for (let batch = 0; !done(); batch++) {
      const messages = await consumer.receive(batches[index], p.invisibleMs ?? 10000);
      const topics = [ ...new Set(messages.map(m => m.topic)) ];
      receives.push({ consumer: index, topics, batchSize: batches[index], got: messages.length });
      const views = messages.map(m => Object.assign(view(m), { consumer: index, batch }));
      deliveries.push(...views);
      if (p.holdMs && messages.length > 0) await setTimeout(p.holdMs);
      for (const [ i, m ] of messages.entries()) {
        try {
          await consumer.ack(m);
          views[i].ack = 'ok';
          acked.add(views[i].body);
        } catch (err) {
          views[i].ack = err.message;
        }
        views[i].ackedAt = Date.now();
      }
    }
  };
  await Promise.all(consumers.map(consume));
  return { deliveries, receives };
});
