// Package auth holds what the remoting front-ends (the broker and the
// name server) share to authenticate a request: the extraction of its
// ACL credentials for the engine's hook.Authenticators. The front-ends
// decide which requests to check and how; this package only reads what
// a request carries.
package auth
