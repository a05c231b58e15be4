// Package compat holds the compatibility tests of karman's protocol
// front-ends against real clients nobody here wrote, on loopback ports
// chosen at run time: the RocketMQ Go remoting client drives the name
// server and broker, and the RocketMQ Node.js client (rocketmq-client-nodejs,
// pinned in testdata/node, installed there with "npm ci" when missing)
// drives the gRPC endpoint through the scenario scripts of testdata/node.
// The tests run against an in-process "karman serve" and against the
// built binary. It has no code of its own.
package compat
