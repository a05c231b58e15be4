'use strict';
// A Producer or a SimpleConsumer starts with topics or a group the server
// may not know, and then uses each topic once. Start-up must end, started
// or failed with the server's error; it must not hang (the client waits
// for the server's answer to its settings).
//
// Parameters:
//	kind           "producer" or "simple"
//	topics         the producer's topics, or
//	subscriptions  [{topic, expression?, sql?}] of the simple consumer
//	group          the simple consumer's group
//	sendTo         topics the started producer sends one message to
//	receives       how many receives the started consumer makes (it
//	               takes its topics in turn)
//	hangMs         how long start-up may take (default 15 s)
//
// Result: {started, startupMs, error, outcomes}: error is the start-up
// error, {message, code, cause: {message, code}}, or a description of the
// hang; outcomes are the sends' and receives' results in order, each
// {topic?, ok, got?, error?}.

const { setTimeout: sleep } = require('node:timers/promises');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, progress, run } = require('./lib');

// errorOf describes a client error and its cause.
function errorOf(err) {
  if (!err) return null;
  return { message: err.message, code: err.code ?? null, cause: errorOf(err.cause) };
}

function newClient(endpoint, p) {
  if (p.kind === 'producer') {
    return new Producer(clientOptions(endpoint, { topics: p.topics }));
  }
  assert(p.kind === 'simple' && p.group && Array.isArray(p.subscriptions), 'kind producer or simple, with group and subscriptions');
  return new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map(p.subscriptions.map(s => [ s.topic, filter(s.expression, s.sql) ])),
    awaitDuration: 1000,
  }));
}

async function use(client, p) {
  const outcomes = progress.outcomes = [];
  for (const topic of p.sendTo ?? []) {
    try {
      const r = await client.send({ topic, body: Buffer.from(`to ${topic}`) });
      outcomes.push({ topic, ok: true, id: r.messageId });
    } catch (err) {
      outcomes.push({ topic, ok: false, error: errorOf(err) });
    }
  }
  for (let i = 0; i < (p.receives ?? 0); i++) {
    try {
      const ms = await client.receive(32, 10000);
      for (const m of ms) await client.ack(m);
      outcomes.push({ ok: true, got: ms.length, topics: [ ...new Set(ms.map(m => m.topic)) ] });
    } catch (err) {
      outcomes.push({ ok: false, error: errorOf(err) });
    }
  }
  return outcomes;
}

run(async (endpoint, p) => {
  const client = newClient(endpoint, p);
  const hangMs = p.hangMs ?? 15000;
  const start = Date.now();
  const result = await Promise.race([
    client.startup().then(() => 'started', err => err),
    sleep(hangMs, 'hung'),
  ]);
  const startupMs = Date.now() - start;
  if (result === 'hung') {
    return { started: false, startupMs, error: { message: `start-up still waiting after ${hangMs} ms` }, outcomes: [] };
  }
  if (result !== 'started') return { started: false, startupMs, error: errorOf(result), outcomes: [] };
  const outcomes = await use(client, p);
  await client.shutdown();
  return { started: true, startupMs, error: null, outcomes };
});
