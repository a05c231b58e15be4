'use strict';
// PushConsumers of one group joining and leaving while a Producer sends:
// the producer sends in phases, and before each phase consumers start or
// stop as the phase says, each new one waiting until its first
// QueryAssignment was answered. The scenario ends once every body sent
// was consumed successfully, and lingerMs after that (to see that nothing
// comes again).
//
// Parameters:
//	topic, group  what to send and consume
//	phases        [{start: n, stop: [index], send: count}]: start n more
//	              consumers (numbered from 0 in start order), stop (shut
//	              down) the consumers listed, then send count messages
//	              "m-<i>" (numbered across phases)
//	failEvery     the listener fails the first delivery of every
//	              failEvery-th message (default none)
//	groups        when set, message i is of message group "g<i % groups>"
//	              (for FIFO topics)
//	lingerMs      how long to go on consuming at the end
//
// Result: {sent: [{body, id}], deliveries: [view + {result, consumer,
// doneAt}], assignments: [{consumer, at, queues: ["broker/id"]}],
// stoppedAt: {consumer: ms}, startedAt: {consumer: ms}}.

const { setTimeout } = require('node:timers/promises');
const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group && Array.isArray(p.phases), 'topic, group and phases are required');
  const inbox = new Inbox();
  const assignments = new Inbox();
  progress.deliveries = inbox.items;
  progress.assignments = assignments.items;
  const startedAt = {};
  const stoppedAt = {};
  const failed = new Set();

  const consumer = index => {
    const c = new PushConsumer(clientOptions(endpoint, {
      consumerGroup: p.group,
      subscriptions: new Map([[ p.topic, filter('*') ]]),
      messageListener: {
        async consume(m) {
          const v = view(m);
          const n = Number(v.body.slice(2));
          const fail = p.failEvery > 0 && n % p.failEvery === 0 && !failed.has(v.body);
          if (fail) failed.add(v.body);
          Object.assign(v, { result: fail ? 'FAILURE' : 'SUCCESS', consumer: index, doneAt: Date.now() });
          inbox.push(v);
          return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
        },
      },
    }));
    // Every QueryAssignment answer the consumer gets.
    const rpc = c.rpcClientManager;
    const queryAssignment = rpc.queryAssignment.bind(rpc);
    rpc.queryAssignment = async (...args) => {
      const response = await queryAssignment(...args);
      const queues = response.getAssignmentsList().map(a => {
        const mq = a.getMessageQueue();
        const ep = mq.getBroker().getEndpoints().getAddressesList().map(x => `${x.getHost()}:${x.getPort()}`);
        return `${mq.getBroker().getName()}/${mq.getId()}@${ep.join(',')}`;
      });
      assignments.push({ consumer: index, at: Date.now(), code: response.getStatus()?.getCode(), queues });
      return response;
    };
    return c;
  };

  const producer = new Producer(clientOptions(endpoint, { topics: [ p.topic ] }));
  await producer.startup();
  const consumers = [];
  const sent = progress.sent = [];
  for (const phase of p.phases) {
    for (const index of phase.stop ?? []) {
      await consumers[index].shutdown();
      stoppedAt[index] = Date.now();
    }
    const starting = [];
    for (let i = 0; i < (phase.start ?? 0); i++) {
      const index = consumers.length;
      const c = consumer(index);
      consumers.push(c);
      starting.push(c.startup().then(() => {
        startedAt[index] = Date.now();
        return assignments.until(`consumer ${index}'s first assignment`, 30000,
          items => items.some(a => a.consumer === index && a.queues.length > 0));
      }));
    }
    await Promise.all(starting);
    for (let i = 0; i < (phase.send ?? 0); i++) {
      const body = `m-${sent.length}`;
      const messageGroup = p.groups ? `g${sent.length % p.groups}` : undefined;
      const receipt = await producer.send({ topic: p.topic, body: Buffer.from(body), tag: 'crowd', messageGroup });
      sent.push({ body, id: receipt.messageId });
    }
  }
  await inbox.until('every message consumed', (p.deadlineMs ?? 60000) - 5000, items => {
    const ok = new Set(items.filter(d => d.result === 'SUCCESS').map(d => d.body));
    return ok.size >= sent.length;
  });
  if (p.lingerMs) await setTimeout(p.lingerMs);
  return { sent, deliveries: inbox.items, assignments: assignments.items, startedAt, stoppedAt };
});
