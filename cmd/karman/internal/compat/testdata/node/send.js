'use strict';
// A Producer sends messages one after the other, in the given order.
//
// Parameters:
//	topic     the topic
//	messages  [{body, repeat?, tag?, keys?, properties?, group?, delayMs?}];
//	          the body sent is body repeated repeat times (default once)
//
// Result: {sent: [{body, id, offset, deliverAt}]}, in send order;
// deliverAt is the delivery time a delayed message was given (ms).

const { Producer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, run } = require('./lib');

run(async (endpoint, { topic, messages }) => {
  assert(topic && Array.isArray(messages), 'topic and messages are required');
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ] }));
  await producer.startup();
  const sent = [];
  for (const m of messages) {
    const deliveryTimestamp = m.delayMs ? new Date(Date.now() + m.delayMs) : undefined;
    const receipt = await producer.send({
      topic,
      body: Buffer.from(m.body.repeat(m.repeat ?? 1)),
      tag: m.tag,
      keys: m.keys,
      properties: m.properties ? new Map(Object.entries(m.properties)) : undefined,
      messageGroup: m.group,
      deliveryTimestamp,
    });
    assert.match(receipt.messageId, /^[0-9A-F]{34}$/, 'a message id of the Node client');
    sent.push({
      body: m.body,
      id: receipt.messageId,
      offset: receipt.offset,
      deliverAt: deliveryTimestamp ? deliveryTimestamp.getTime() : null,
    });
  }
  await producer.shutdown();
  return { sent };
});
