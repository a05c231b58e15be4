'use strict';
// PushConsumers of one group (each a client of its own) consume until
// every wanted message was consumed successfully, as push.js does, and
// also report what the server told them and what they asked of it: the
// FIFO flag and retry policy of their settings, and every nack
// (ChangeInvisibleDuration) and dead-letter forward they sent.
//
// Parameters:
//	topic, group    what to consume, as which consumer group
//	consumers       how many consumers (default 1)
//	expression      filter expression (default "*"); sql: true for SQL92
//	count           distinct bodies to consume successfully (default 0)
//	until           or: a body whose successful consumption ends it
//	failOnce        bodies whose first delivery the listener fails
//	poison          bodies the listener always fails
//	poisonAttempts  deliveries each poison body must have had
//	holdMs          how long the listener takes for each message
//	lingerMs        how long to go on consuming once all that arrived
//
// Result: {deliveries: [view + {result, consumer, doneAt}], settings:
// [{consumer, fifo, maxAttempts, delays}], nacks: [{consumer, id, at, ms,
// code}], forwards: [{consumer, id, at, attempt, maxAttempts, code}]};
// delays[i] is the retry policy's delay after delivery attempt i+1, in the
// policy's own unit (whole seconds, which the client sends as ms).

const { setTimeout } = require('node:timers/promises');
const { PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

run(async (endpoint, p) => {
  const failOnce = new Set(p.failOnce ?? []);
  const poison = new Set(p.poison ?? []);
  assert(p.topic && p.group && (p.count > 0 || p.until || poison.size > 0),
    'topic, group and count, until or poison are required');
  const inbox = new Inbox();
  progress.deliveries = inbox.items;
  const nacks = progress.nacks = [];
  const forwards = progress.forwards = [];
  const consumer = index => {
    const c = new PushConsumer(clientOptions(endpoint, {
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
    const rpc = c.rpcClientManager;
    const change = rpc.changeInvisibleDuration.bind(rpc);
    rpc.changeInvisibleDuration = async (endpoints, request, timeout) => {
      const d = request.getInvisibleDuration();
      const at = Date.now();
      const response = await change(endpoints, request, timeout);
      nacks.push({ consumer: index, id: request.getMessageId(), at,
        ms: d.getSeconds() * 1000 + Math.floor(d.getNanos() / 1e6), code: response.getStatus()?.getCode() });
      return response;
    };
    const forward = rpc.forwardMessageToDeadLetterQueue.bind(rpc);
    rpc.forwardMessageToDeadLetterQueue = async (endpoints, request, timeout) => {
      const at = Date.now();
      const response = await forward(endpoints, request, timeout);
      forwards.push({ consumer: index, id: request.getMessageId(), at, attempt: request.getDeliveryAttempt(),
        maxAttempts: request.getMaxDeliveryAttempts(), code: response.getStatus()?.getCode() });
      return response;
    };
    return c;
  };
  const consumers = Array.from({ length: p.consumers ?? 1 }, (_, i) => consumer(i));
  await Promise.all(consumers.map(c => c.startup()));
  const settings = consumers.map((c, i) => {
    const policy = c.getRetryPolicy();
    const maxAttempts = policy ? policy.getMaxAttempts() : 0;
    const delays = Array.from({ length: maxAttempts }, (_, a) => policy.getNextAttemptDelay(a + 1));
    return { consumer: i, fifo: c.getPushConsumerSettings().isFifo(), maxAttempts, delays };
  });
  progress.settings = settings;
  await inbox.until('every wanted message', (p.deadlineMs ?? 60000) - 2000, items => {
    const ok = new Set(items.filter(d => d.result === 'SUCCESS').map(d => d.body));
    const deliveries = body => items.filter(d => d.body === body).length;
    return ok.size >= (p.count ?? 0) && (!p.until || ok.has(p.until)) &&
      [ ...failOnce ].every(b => deliveries(b) >= 2) &&
      [ ...poison ].every(b => deliveries(b) >= (p.poisonAttempts ?? 1));
  });
  if (p.lingerMs) await setTimeout(p.lingerMs);
  return { deliveries: inbox.items, settings, nacks, forwards };
});
