'use strict';
// Shared plumbing of the scenarios: argument parsing, a quiet logger for
// the client, message views as plain objects, a collector tests can wait
// on, and the one JSON line of results on standard output.
//
// Every scenario is run as
//
//	node <scenario>.js <endpoint> [<JSON object of parameters>]
//
// and prints exactly one JSON line on standard output when it succeeds.
// Failures go to standard error with a non-zero exit code.

const assert = require('node:assert');
const util = require('node:util');
const { FilterExpression } = require('rocketmq-client-nodejs');
const { FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

// logLevel is COMPAT_CLIENT_LOG (debug, info, warn or error; default warn).
const levels = { debug: 0, info: 1, warn: 2, error: 3 };
const logLevel = levels[process.env.COMPAT_CLIENT_LOG] ?? levels.warn;

function log(level, args) {
  if (levels[level] >= logLevel) {
    process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} ${util.format(...args)}\n`);
  }
}

// logger is the client's logger: standard error, at COMPAT_CLIENT_LOG.
const logger = {
  debug: (...args) => log('debug', args),
  info: (...args) => log('info', args),
  warn: (...args) => log('warn', args),
  error: (...args) => log('error', args),
  close() {},
};

// clientOptions returns the options every client of a scenario shares;
// COMPAT_TLS=1 makes the clients use TLS, COMPAT_NAMESPACE sets their
// namespace.
function clientOptions(endpoint, extra) {
  const sslEnabled = process.env.COMPAT_TLS === '1';
  const namespace = process.env.COMPAT_NAMESPACE ?? '';
  const accessKey = process.env.COMPAT_ACCESS_KEY;
  const sessionCredentials = accessKey ? { accessKey, accessSecret: process.env.COMPAT_ACCESS_SECRET ?? '' } : undefined;
  return { endpoints: endpoint, namespace, logger, requestTimeout: 5000, sslEnabled, sessionCredentials, ...extra };
}

// filter returns the client's filter expression for a tag expression, or
// for a SQL92 one when sql is set.
function filter(expression, sql) {
  return new FilterExpression(expression ?? '*', sql ? FilterType.SQL : FilterType.TAG);
}

// view returns what a test needs of a received MessageView.
function view(m) {
  return {
    id: m.messageId,
    topic: m.topic,
    body: m.body.toString('utf8'),
    tag: m.tag || null,
    keys: m.keys,
    group: m.messageGroup || null,
    properties: Object.fromEntries(m.properties),
    attempt: m.deliveryAttempt,
    corrupted: Boolean(m.corrupted),
    bornAt: m.bornTimestamp ? m.bornTimestamp.getTime() : null,
    deliverAt: m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : null,
    receivedAt: Date.now(),
  };
}

// Inbox collects items and lets a scenario wait until they satisfy a
// condition, re-checking on every arrival.
class Inbox {
  constructor() {
    this.items = [];
    this.waiters = new Set();
  }

  push(item) {
    this.items.push(item);
    for (const w of this.waiters) w();
  }

  // until resolves once ok(items) holds, and rejects after ms with what
  // has arrived so far.
  until(what, ms, ok) {
    if (ok(this.items)) return Promise.resolve(this.items);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!ok(this.items)) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(this.items);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; have ${summary(this.items)}`));
      }, ms);
      this.waiters.add(check);
    });
  }
}

// short truncates long strings of JSON.stringify.
function short(_key, value) {
  return typeof value === 'string' && value.length > 200 ? `${value.slice(0, 200)}...` : value;
}

function summary(items) {
  return JSON.stringify(items.map(i => (i.body !== undefined ? `${i.body}#${i.attempt ?? ''}` : i)));
}

// progress is what a scenario has seen so far; it is printed to standard
// error if the scenario runs out of time.
const progress = {};

// run parses the arguments, runs main(endpoint, params) and prints what
// it returns as one JSON line. params.deadlineMs (default 60 s) bounds the
// whole scenario.
function run(main) {
  const [ endpoint, raw ] = process.argv.slice(2);
  assert(endpoint, 'usage: node <scenario>.js <endpoint> [<JSON parameters>]');
  const params = raw ? JSON.parse(raw) : {};
  const deadline = setTimeout(() => {
    process.stderr.write(`scenario deadline of ${params.deadlineMs ?? 60000} ms passed; progress: ${JSON.stringify(progress, short)}\n`);
    process.exit(3);
  }, params.deadlineMs ?? 60000);
  deadline.unref();
  main(endpoint, params).then(result => {
    // Exit without waiting for the clients' timers; the line is written
    // first (a pipe may take it asynchronously).
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
  }, err => {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    if (err && err.cause) process.stderr.write(`caused by: ${err.cause.stack ?? err.cause}\n`);
    process.exit(1);
  });
}

module.exports = { assert, logger, clientOptions, filter, view, Inbox, progress, run };
