'use strict';
// Transactional messages of a Producer, each ended at once by its body's
// first word: "commit..." is committed, "rollback..." rolled back. A
// check, should one come, answers the same.
//
// Parameters:
//	topic     the topic (TRANSACTION)
//	messages  [{body, tag?, keys?, properties?}], sent in this order
//
// Result: {sent: [{body, id, transactionId}]}, in send order.

const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { assert, clientOptions, run } = require('./lib');

// decide returns whether the message of body is committed.
const decide = body => {
  if (body.startsWith('commit')) return true;
  assert(body.startsWith('rollback'), `body ${body} says neither commit nor rollback`);
  return false;
};

run(async (endpoint, { topic, messages }) => {
  assert(topic && Array.isArray(messages), 'topic and messages are required');
  const checker = {
    async check(m) {
      return decide(m.body.toString('utf8')) ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
    },
  };
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ], checker }));
  await producer.startup();
  const sent = [];
  for (const m of messages) {
    const tx = producer.beginTransaction();
    const receipt = await producer.send({
      topic,
      body: Buffer.from(m.body),
      tag: m.tag,
      keys: m.keys,
      properties: m.properties ? new Map(Object.entries(m.properties)) : undefined,
    }, tx);
    if (decide(m.body)) {
      await tx.commit();
    } else {
      await tx.rollback();
    }
    sent.push({ body: m.body, id: receipt.messageId, transactionId: receipt.transactionId });
  }
  await producer.shutdown();
  return { sent };
});
