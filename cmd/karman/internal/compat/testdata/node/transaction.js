'use strict';
// Transactional messages of a Producer, by their bodies:
//
//	commit           committed at once
//	rollback         rolled back at once
//	orphan-commit    left open; the checker answers nothing to the first
//	                 check and COMMIT to the next
//	orphan-rollback  left open; nothing to the first check, then ROLLBACK
//	last             committed once both orphans were resolved
//
// A SimpleConsumer then receives until "last" arrived (the topic has one
// queue, so everything committed before it has arrived too).
//
// Parameters: topic (one queue, TRANSACTION), group.
// Result: {sent: [{body, id, transactionId}], checks: [view + {answer}],
// ends: [{id, resolution, source}], received: [view]}.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const {
  TransactionResolution, TransactionSource,
} = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { assert, clientOptions, filter, view, Inbox, progress, run } = require('./lib');

const name = (enumeration, value) => Object.keys(enumeration).find(k => enumeration[k] === value) ?? String(value);

run(async (endpoint, p) => {
  const { topic, group } = p;
  assert(topic && group, 'topic and group are required');
  const checks = progress.checks = [];
  const checker = {
    async check(m) {
      const v = view(m);
      const before = checks.filter(c => c.body === v.body).length;
      let answer = TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED;
      if (before > 0 && v.body === 'orphan-commit') answer = TransactionResolution.COMMIT;
      if (before > 0 && v.body === 'orphan-rollback') answer = TransactionResolution.ROLLBACK;
      v.answer = name(TransactionResolution, answer);
      checks.push(v);
      return answer;
    },
  };
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ], checker }));
  // Every EndTransaction the client completes, from its own calls and
  // from checks.
  const ends = new Inbox();
  progress.ends = ends.items;
  const endTransaction = producer.endTransaction.bind(producer);
  producer.endTransaction = async (endpoints, message, id, transactionId, resolution, source) => {
    await endTransaction(endpoints, message, id, transactionId, resolution, source);
    ends.push({ id, resolution: name(TransactionResolution, resolution),
      source: name(TransactionSource, source ?? TransactionSource.SOURCE_CLIENT) });
  };
  await producer.startup();

  const sent = progress.sent = [];
  const send = async body => {
    const tx = producer.beginTransaction();
    const receipt = await producer.send({
      topic, body: Buffer.from(body), tag: 'txn', keys: [ `key-${body}` ],
      properties: new Map([[ 'kind', body ]]),
    }, tx);
    sent.push({ body, id: receipt.messageId, transactionId: receipt.transactionId });
    return tx;
  };
  await (await send('commit')).commit();
  await (await send('rollback')).rollback();
  await send('orphan-commit');
  await send('orphan-rollback');
  const idOf = body => sent.find(s => s.body === body).id;
  await ends.until('the checks to resolve both orphans', (p.deadlineMs ?? 60000) - 10000, items =>
    items.some(e => e.id === idOf('orphan-commit')) && items.some(e => e.id === idOf('orphan-rollback')));
  await (await send('last')).commit();

  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: group,
    subscriptions: new Map([[ topic, filter('*') ]]),
    awaitDuration: 2000,
  }));
  await consumer.startup();
  const received = progress.received = [];
  while (!received.some(m => m.body === 'last')) {
    for (const m of await consumer.receive(16, 10000)) {
      received.push(view(m));
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  await producer.shutdown();
  return { sent, checks, ends: ends.items, received };
});
