'use strict';
// Two SimpleConsumers of a FIFO group take turns on a FIFO topic holding
// a0, a1, a2 (message group A) and b0, b1 (group B), in that order per
// group, and record what each receive got:
//
//	1. first receives: the head of each group, a0 and b0
//	2. second receives: nothing, both groups have a message in flight
//	3. first acknowledges b0; second receives b1, not a1
//	4. first cuts the invisible duration of a0 to changeMs; second
//	   receives until a0 comes back (attempt 2), never a1 before it
//	5. second acknowledges a0 and b1; they receive in turn, acknowledging
//	   each message, until a2 arrived
//
// Parameters: topic, group, changeMs (default 1 s).
// Result: {steps: [{step, consumer, at, got: [view]}], changedAt}: every
// receive in order, when it was sent, and when a0's invisible duration
// was cut.

const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, view, progress, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group, 'topic and group are required');
  const consumers = [ 0, 1 ].map(() => new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter('*') ]]),
    awaitDuration: 1000,
  })));
  await Promise.all(consumers.map(c => c.startup()));
  const steps = progress.steps = [];
  const held = new Map(); // body -> MessageView
  const receive = async (step, consumer) => {
    const at = Date.now();
    const ms = await consumers[consumer].receive(32, 10000);
    for (const m of ms) held.set(m.body.toString(), m);
    const got = ms.map(view);
    steps.push({ step, consumer, at, got });
    return got;
  };
  const ack = async (consumer, body) => {
    await consumers[consumer].ack(held.get(body));
    held.delete(body);
  };

  await receive(1, 0);
  await receive(2, 1);
  await ack(0, 'b0');
  await receive(3, 1);
  const changedAt = Date.now();
  await consumers[0].changeInvisibleDuration(held.get('a0'), p.changeMs ?? 1000);
  for (let i = 0; i < 10; i++) {
    const got = await receive(4, 1);
    if (got.some(v => v.body === 'a0')) break;
  }
  await ack(1, 'a0');
  await ack(1, 'b1');
  for (let i = 0; i < 10 && !steps.some(s => s.got.some(v => v.body === 'a2')); i++) {
    for (const v of await receive(5, i % 2)) await ack(i % 2, v.body);
  }
  return { steps, changedAt };
});
