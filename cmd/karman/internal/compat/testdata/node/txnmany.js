'use strict';
// Many transactions at once, and a producer restarted while some are open.
//
// Producer 0 sends the half messages "t-<i>" (i < count) all at once, and
// then ends each by i % 8:
//
//	0, 4  committed at once         1, 5  rolled back at once
//	2     left open; the checker answers COMMIT
//	3     left open; the checker answers ROLLBACK
//	6     left open; the checker answers nothing (UNKNOWN) to the first
//	      check and COMMIT to the next
//	7     the same, then ROLLBACK
//
// Once every open one was ended by a check, producer 0 sends the halves
// "r-<i>" (i < restartCount), leaves them open and shuts down; producer 1,
// a new client of the same topic, then resolves them when checked: COMMIT
// for even i, ROLLBACK for odd. A SimpleConsumer receives until every
// committed body arrived, and lingerMs more.
//
// Parameters: topic, group, count, restartCount, lingerMs.
// Result: {sent: [{body, id, transactionId, producer}], checks: [view +
// {answer, producer, at}], ends: [{id, resolution, source, producer, at}],
// received: [view], shutdownAt}. A check's at is when it arrived; an
// end's, when its EndTransaction was answered; shutdownAt, when producer
// 0's shutdown returned.

const { setTimeout } = require('node:timers/promises');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const {
  TransactionResolution, TransactionSource,
} = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

const name = (enumeration, value) => Object.keys(enumeration).find(k => enumeration[k] === value) ?? String(value);
const { COMMIT, ROLLBACK, TRANSACTION_RESOLUTION_UNSPECIFIED: UNKNOWN } = TransactionResolution;

// answer is the checker's answer for body, checked before times already.
function answer(body, before) {
  const i = Number(body.slice(2));
  if (body.startsWith('r-')) return i % 2 === 0 ? COMMIT : ROLLBACK;
  switch (i % 8) {
    case 2: return COMMIT;
    case 3: return ROLLBACK;
    case 6: return before > 0 ? COMMIT : UNKNOWN;
    case 7: return before > 0 ? ROLLBACK : UNKNOWN;
    default: return UNKNOWN; // ended at once: never to be checked
  }
}

// committed reports whether body ends committed.
function committed(body) {
  const i = Number(body.slice(2));
  if (body.startsWith('r-')) return i % 2 === 0;
  return [ 0, 4, 2, 6 ].includes(i % 8);
}

run(async (endpoint, p) => {
  const { topic, group, count, restartCount } = p;
  assert(topic && group && count > 0 && restartCount > 0, 'topic, group, count and restartCount are required');
  const checks = progress.checks = [];
  const ends = new Inbox();
  progress.ends = ends.items;
  const producer = index => {
    const checker = {
      async check(m) {
        const v = view(m);
        const a = answer(v.body, checks.filter(c => c.body === v.body).length);
        checks.push(Object.assign(v, { answer: name(TransactionResolution, a), producer: index, at: Date.now() }));
        return a;
      },
    };
    const prod = new Producer(clientOptions(endpoint, { topics: [ topic ], checker }));
    const endTransaction = prod.endTransaction.bind(prod);
    prod.endTransaction = async (endpoints, message, id, transactionId, resolution, source) => {
      await endTransaction(endpoints, message, id, transactionId, resolution, source);
      ends.push({ id, resolution: name(TransactionResolution, resolution),
        source: name(TransactionSource, source ?? TransactionSource.SOURCE_CLIENT), producer: index, at: Date.now() });
    };
    return prod;
  };
  const sent = progress.sent = [];
  const send = async (prod, index, body) => {
    const tx = prod.beginTransaction();
    const receipt = await prod.send({ topic, body: Buffer.from(body), tag: 'txn', keys: [ `key-${body}` ] }, tx);
    sent.push({ body, id: receipt.messageId, transactionId: receipt.transactionId, producer: index });
    return tx;
  };
  const resolved = bodies => items => bodies.every(b => {
    const s = sent.find(x => x.body === b);
    return s && items.some(e => e.id === s.id);
  });

  const first = producer(0);
  await first.startup();
  const bodies = Array.from({ length: count }, (_, i) => `t-${i}`);
  await Promise.all(bodies.map(async (body, i) => {
    const tx = await send(first, 0, body);
    if (i % 8 === 0 || i % 8 === 4) await tx.commit();
    if (i % 8 === 1 || i % 8 === 5) await tx.rollback();
  }));
  await ends.until('every transaction of producer 0 to end', (p.deadlineMs ?? 60000) / 2, resolved(bodies));

  const later = Array.from({ length: restartCount }, (_, i) => `r-${i}`);
  for (const body of later) await send(first, 0, body);
  await first.shutdown();
  const shutdownAt = Date.now();
  const second = producer(1);
  await second.startup();
  await ends.until('producer 1 to end the open transactions', (p.deadlineMs ?? 60000) / 2, resolved(later));

  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: group,
    subscriptions: new Map([[ topic, filter('*') ]]),
    awaitDuration: 1000,
  }));
  await consumer.startup();
  const received = progress.received = [];
  const want = [ ...bodies, ...later ].filter(committed);
  const receive = async () => {
    for (const m of await consumer.receive(32, 10000)) {
      received.push(view(m));
      await consumer.ack(m);
    }
  };
  while (!want.every(b => received.some(m => m.body === b))) await receive();
  for (const end = Date.now() + (p.lingerMs ?? 0); Date.now() < end;) await receive();
  await setTimeout(0);
  return { sent, checks, ends: ends.items, received, shutdownAt };
});
