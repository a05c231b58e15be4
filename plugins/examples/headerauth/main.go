// Command headerauth is a Karman plugin that lets a send through only
// when each of its messages carries a configured property (header) with
// an allowed value: a store interceptor that rejects the batch
// otherwise, with a reason the producer sees.
//
// Configuration:
//
//	header   the property to check (required)
//	allow    allowed values, separated by '+' (required)
//	topics   topics checked, separated by '+' (default: every topic)
//
//	karman serve --plugin auth=/path/to/headerauth,header=token,allow=s3cret
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/karmanmq/karman/plugins/shared"
)

type headerAuth struct {
	header string
	allow  []string
	topics []string
}

func (h *headerAuth) Configure(_ context.Context, _ string, cfg map[string]string) (shared.Settings, error) {
	h.header = cfg["header"]
	if h.header == "" {
		return shared.Settings{}, errors.New("headerauth: header is required")
	}
	if cfg["allow"] == "" {
		return shared.Settings{}, errors.New("headerauth: allow is required")
	}
	h.allow = strings.Split(cfg["allow"], "+")
	if t := cfg["topics"]; t != "" {
		h.topics = strings.Split(t, "+")
	}
	return shared.Settings{}, nil
}

func (h *headerAuth) BeforeStore(_ context.Context, b *shared.StoreBatch) error {
	if len(h.topics) > 0 && !slices.Contains(h.topics, b.Topic) {
		return nil
	}
	for i, m := range b.Messages {
		v, ok := m.Properties[h.header]
		if !ok {
			return shared.Reject(fmt.Sprintf("message %d has no %s", i, h.header))
		}
		if !slices.Contains(h.allow, v) {
			return shared.Reject(fmt.Sprintf("message %d: %s not allowed to send to %s", i, h.header, b.Topic))
		}
	}
	return nil
}

func main() { shared.Serve(&headerAuth{}) }
