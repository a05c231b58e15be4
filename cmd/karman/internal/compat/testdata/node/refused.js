'use strict';
// A SimpleConsumer whose subscription the server should refuse tries to
// start: its start-up must fail with the server's error, not hang (the
// client waits for the server's answer to its settings).
//
// Parameters: topic, group, expression, sql, hangMs (default 10 s).
// Result: {started, error}: whether start-up succeeded, and its error
// with the cause the server gave.

const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { assert, clientOptions, filter, run } = require('./lib');

run(async (endpoint, p) => {
  assert(p.topic && p.group && p.expression, 'topic, group and expression are required');
  const consumer = new SimpleConsumer(clientOptions(endpoint, {
    consumerGroup: p.group,
    subscriptions: new Map([[ p.topic, filter(p.expression, p.sql) ]]),
    awaitDuration: 1000,
  }));
  let timer;
  const hung = new Promise(resolve => {
    timer = setTimeout(() => resolve('hung'), p.hangMs ?? 10000);
  });
  const result = await Promise.race([
    consumer.startup().then(() => 'started', err => err),
    hung,
  ]);
  clearTimeout(timer);
  if (result === 'started') {
    await consumer.shutdown();
    return { started: true, error: null };
  }
  if (result === 'hung') return { started: false, error: `start-up still waiting after ${p.hangMs ?? 10000} ms` };
  return { started: false, error: `${result.message}; cause: ${result.cause ?? ''}` };
});
