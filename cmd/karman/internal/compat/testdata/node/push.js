'use strict';
// PushConsumers of one group (each a client of its own) consume until
// every wanted message was consumed successfully. The server's settings
// decide whether they consume concurrently or in FIFO order.
//
// Parameters:
//	topic, group    what to consume, as which consumer group
//	consumers       how many consumers (default 1)
//	expression      filter expression (default "*"); sql: true for SQL92
//	count           distinct bodies to consume successfully (default 0)
//	failOnce        bodies whose first delivery the listener fails
//	poison          bodies the listener always fails
//	poisonAttempts  deliveries each poison body must have had
//	holdMs          how long the listener takes for each message
//	lingerMs        how long to go on consuming once all that arrived
//	                (to see that nothing more does)
//
// Result: {deliveries: [view + {result, consumer, doneAt}]}, in
// consumption order; consumer is the index of the consumer that got it,
// receivedAt when the listener was called, doneAt when it returned.
//
// The script exits without shutting the consumers down: shutdown waits for
// the receive requests in flight, each a long poll of up to 30 s.

const { setTimeout } = require('node:timers/promises');
const { PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

run(async (endpoint, p) => {
  const failOnce = new Set(p.failOnce ?? []);
  const poison = new Set(p.poison ?? []);
  assert(p.topic && p.group && (p.count > 0 || poison.size > 0), 'topic, group and count or poison are required');
  const inbox = new Inbox();
  progress.deliveries = inbox.items;
  const consumer = index => new PushConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter(p.expression, p.sql) ]]),
    messageListener: {
      async consume(m) {
        const v = view(m);
        const seen = inbox.items.filter(d => d.body === v.body).length;
        const fail = poison.has(v.body) || (failOnce.has(v.body) && seen === 0);
        v.result = fail ? 'FAILURE' : 'SUCCESS';
        v.consumer = index;
        if (p.holdMs) await setTimeout(p.holdMs);
        v.doneAt = Date.now();
        inbox.push(v);
        return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
      },
    },
  }));
  const consumers = Array.from({ length: p.consumers ?? 1 }, (_, i) => consumer(i));
  await Promise.all(consumers.map(c => c.startup()));
  await inbox.until('every wanted message', (p.deadlineMs ?? 60000) - 2000, items => {
    const ok = new Set(items.filter(d => d.result === 'SUCCESS').map(d => d.body));
    const deliveries = body => items.filter(d => d.body === body).length;
    return ok.size >= (p.count ?? 0) &&
      [ ...failOnce ].every(b => deliveries(b) >= 2) &&
      [ ...poison ].every(b => deliveries(b) >= (p.poisonAttempts ?? 1));
  });
  if (p.lingerMs) await setTimeout(p.lingerMs);
  return { deliveries: inbox.items };
});
