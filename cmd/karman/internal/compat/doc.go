// Package compat holds the compatibility tests of karman's protocol
// front-ends against real clients nobody here wrote: the RocketMQ Go
// remoting client drives an in-process "karman serve" (name server and
// broker on loopback ports chosen at run time). It has no code of its own.
package compat
