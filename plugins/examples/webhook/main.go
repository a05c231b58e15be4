// Command webhook is a Karman sink plugin that posts the broker's
// messages, batch by batch, as JSON to a URL.
//
// Configuration (the key=value pairs of the plugin spec):
//
//	url      where to POST (required)
//	topics   topics to forward, separated by '+' (default: every user topic)
//	retries  attempts per batch before the broker is told it failed
//	         (default 3; the broker then hands the batch again later)
//	timeout  timeout of one POST (default 1s)
//
// Each POST carries {"messages":[{"topic","body","properties",
// "queueId","queueOffset","commitLogOffset","storeTimestamp"}]}, body
// base64-encoded as encoding/json does for bytes. A 2xx answer
// acknowledges the batch. A batch may be posted more than once (at least
// once): receivers deduplicate by topic, queueId and queueOffset.
//
//	karman serve --plugin hook=/path/to/webhook,url=http://127.0.0.1:8080/in
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/plugins/shared"
)

type webhook struct {
	url     string
	retries int
	client  *http.Client
}

type payload struct {
	Messages []jsonMessage `json:"messages"`
}

type jsonMessage struct {
	Topic           string            `json:"topic"`
	Body            []byte            `json:"body"`
	Properties      map[string]string `json:"properties,omitempty"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
}

func (w *webhook) Configure(_ context.Context, _ string, cfg map[string]string) (shared.Settings, error) {
	var st shared.Settings
	w.url = cfg["url"]
	if w.url == "" {
		return st, errors.New("webhook: url is required")
	}
	w.retries = 3
	if s, ok := cfg["retries"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return st, fmt.Errorf("webhook: retries %q: want a positive number", s)
		}
		w.retries = n
	}
	timeout := time.Second
	if s, ok := cfg["timeout"]; ok {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return st, fmt.Errorf("webhook: timeout %q: want a positive duration", s)
		}
		timeout = d
	}
	w.client = &http.Client{Timeout: timeout}
	if t := cfg["topics"]; t != "" {
		st.SinkTopics = strings.Split(t, "+")
	}
	return st, nil
}

func (w *webhook) Write(ctx context.Context, msgs []shared.Message) error {
	p := payload{Messages: make([]jsonMessage, len(msgs))}
	for i, m := range msgs {
		p.Messages[i] = jsonMessage{m.Topic, m.Body, m.Properties, m.QueueID, m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err = w.post(ctx, body)
		if err == nil || attempt == w.retries || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (w *webhook) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook: %s answered %s", w.url, resp.Status)
	}
	return nil
}

func main() { shared.Serve(&webhook{}) }
