'use strict';
// A Producer sends messages one after the other, in the given order, and
// records for each the receipt or the error the send ended with (send.js
// stops at the first error).
//
// Parameters:
//	topic     the topic
//	messages  [{body, repeat?, tag?, keys?, properties?, group?, delayMs?}],
//	          as for send.js
//
// Result: {sent: [{body, id, offset, deliverAt, error}]}, in send order;
// error is null, or {name, message, code} of the client's error (code is
// the status code the server answered, null for an error the client
// raised itself).

const { Producer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, progress, run } = require('./lib');

run(async (endpoint, { topic, messages }) => {
  assert(topic && Array.isArray(messages), 'topic and messages are required');
  const producer = new Producer(clientOptions(endpoint, { topics: [ topic ] }));
  await producer.startup();
  const sent = progress.sent = [];
  for (const m of messages) {
    const deliveryTimestamp = m.delayMs ? new Date(Date.now() + m.delayMs) : undefined;
    const result = { body: m.body, id: null, offset: null, deliverAt: deliveryTimestamp ? deliveryTimestamp.getTime() : null, error: null };
    try {
      const receipt = await producer.send({
        topic,
        body: Buffer.from(m.body.repeat(m.repeat ?? 1)),
        tag: m.tag,
        keys: m.keys,
        properties: m.properties ? new Map(Object.entries(m.properties)) : undefined,
        messageGroup: m.group,
        deliveryTimestamp,
      });
      result.id = receipt.messageId;
      result.offset = receipt.offset;
    } catch (err) {
      result.error = { name: err.name, message: err.message, code: err.code ?? null };
    }
    sent.push(result);
  }
  await producer.shutdown();
  return { sent };
});
