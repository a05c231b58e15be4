// Package plugins will hold the process-plugin host and SDK (on
// hashicorp/go-plugin): authentication, interceptors and connectors that run
// outside the broker process, on cold paths only.
package plugins
