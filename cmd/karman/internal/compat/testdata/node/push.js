'use strict';
// A PushConsumer consumes until every wanted message was consumed
// successfully. The server's settings decide whether it consumes
// concurrently or in FIFO order.
//
// Parameters:
//	topic, group    what to consume, as which consumer group
//	expression      filter expression (default "*"); sql: true for SQL92
//	count           distinct bodies to consume successfully
//	failOnce        bodies whose first delivery the listener fails
//	poison          bodies the listener always fails
//	poisonAttempts  deliveries each poison body must have had
//
// Result: {deliveries: [view + {result}]}, in consumption order.
//
// The script exits without shutting the consumer down: shutdown waits for
// the receive requests in flight, each a long poll of up to 30 s.

const { PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group && p.count > 0, 'topic, group and count are required');
  const failOnce = new Set(p.failOnce ?? []);
  const poison = new Set(p.poison ?? []);
  const inbox = new Inbox();
  progress.deliveries = inbox.items;
  const consumer = new PushConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter(p.expression, p.sql) ]]),
    messageListener: {
      consume(m) {
        const v = view(m);
        const seen = inbox.items.filter(d => d.body === v.body).length;
        const fail = poison.has(v.body) || (failOnce.has(v.body) && seen === 0);
        v.result = fail ? 'FAILURE' : 'SUCCESS';
        inbox.push(v);
        return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
      },
    },
  }));
  await consumer.startup();
  await inbox.until('every wanted message', (p.deadlineMs ?? 60000) - 2000, items => {
    const ok = new Set(items.filter(d => d.result === 'SUCCESS').map(d => d.body));
    const deliveries = body => items.filter(d => d.body === body).length;
    return ok.size >= p.count &&
      [ ...failOnce ].every(b => deliveries(b) >= 2) &&
      [ ...poison ].every(b => deliveries(b) >= (p.poisonAttempts ?? 1));
  });
  return { deliveries: inbox.items };
});
