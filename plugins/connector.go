package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/plugins/internal/pluginpb"
)

// Kind is a connector's kind.
type Kind string

// Connector kinds.
const (
	KindSink   Kind = "sink"   // the broker's commit log into the plugin
	KindSource Kind = "source" // the plugin's messages into the broker
)

// ErrConnector: a connector that cannot start (already running, a
// position file that does not parse).
var ErrConnector = errors.New("plugins: connector")

// Connector moves messages between the engine and a plugin, on its own
// goroutine between Start and Stop.
type Connector struct {
	p    *Plugin
	kind Kind

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Name returns the plugin's name.
func (c *Connector) Name() string { return c.p.spec.Name }

// Kind returns the connector's kind.
func (c *Connector) Kind() Kind { return c.kind }

// PositionFile returns where a sink keeps its position under the
// engine's data directory dir.
func PositionFile(dir, name string) string {
	return filepath.Join(dir, "plugins", name+".pos")
}

// Start starts the connector on the open engine e; it runs until Stop,
// the plugin's Close or e's Close. ctx is for the start only.
func (c *Connector) Start(ctx context.Context, e *engine.Engine) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return fmt.Errorf("%w: %s %s already started", ErrConnector, c.Name(), c.kind)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	run := c.runSource
	if c.kind == KindSink {
		f, err := c.follower(e)
		if err != nil {
			return err
		}
		run = func(ctx context.Context, e *engine.Engine) { c.runSink(ctx, e, f) }
	}
	rctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		run(rctx, e)
	}()
	c.p.log.Info("connector started", "kind", c.kind)
	return nil
}

// Stop stops the connector and waits for it. A sink's position is what
// it stored after the last batch the plugin acknowledged.
func (c *Connector) Stop() {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.cancel, c.done = nil, nil
	c.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	c.p.log.Info("connector stopped", "kind", c.kind)
}

// follower returns a Follower from the sink's stored position, or from
// the spec's start when none is stored.
func (c *Connector) follower(e *engine.Engine) (*engine.Follower, error) {
	first, end := e.LogRange()
	from := first
	if c.p.spec.From == "end" {
		from = end
	}
	path := PositionFile(e.Dir(), c.Name())
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		pos, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil || pos < 0 {
			return nil, fmt.Errorf("%w: %s: position file %s: %q is not an offset", ErrConnector, c.Name(), path, b)
		}
		from = pos
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s: %w", ErrConnector, c.Name(), err)
	}
	f, err := e.Follow(from)
	var gone *engine.OffsetGoneError
	if errors.As(err, &gone) {
		c.p.log.Warn("sink position no longer retained; going on from the log's start", "position", from, "first", gone.First)
		f, err = e.Follow(gone.First)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: follow from %d: %w", ErrConnector, c.Name(), from, err)
	}
	return f, nil
}

// savePosition stores pos durably: a new file renamed over the old one.
func savePosition(path string, pos int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(pos, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// wants reports whether the sink gets messages of topic.
func (c *Connector) wants(topic string) bool {
	if len(c.p.topics) > 0 {
		return slices.Contains(c.p.topics, topic)
	}
	return !message.IsSystemTopic(topic) && !message.IsRetryTopic(topic) && !message.IsDLQTopic(topic)
}

// runSink follows the log and hands the plugin its messages, storing
// the position after each acknowledged batch.
func (c *Connector) runSink(ctx context.Context, e *engine.Engine, f *engine.Follower) {
	p := c.p
	path := PositionFile(e.Dir(), c.Name())
	var batch []*pluginpb.Message
	for {
		recs, err := f.Next(ctx)
		if err != nil {
			var gone *engine.OffsetGoneError
			if errors.As(err, &gone) {
				p.log.Warn("sink fell behind retention; going on from the log's start", "first", gone.First)
				if f, err = e.Follow(gone.First); err == nil {
					continue
				}
			}
			if ctx.Err() == nil && !errors.Is(err, engine.ErrClosed) {
				p.log.Error("sink stopped", "err", err)
			}
			return
		}
		batch = batch[:0]
		for i, r := range recs {
			m, _, err := message.DecodeStored(r.Data)
			if err != nil {
				p.log.Error("sink: undecodable record skipped", "offset", r.Offset, "err", err)
			} else if c.wants(m.Topic) {
				batch = append(batch, &pluginpb.Message{
					Topic: m.Topic, Body: m.Body, Flag: m.Flag, Properties: m.EncodedProperties,
					QueueId: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset,
					StoreTimestamp: m.StoreTimestamp, BornTimestamp: m.BornTimestamp,
				})
			}
			// Hand over a full batch, or what is left at the end of recs,
			// and store the position after it once acknowledged.
			if len(batch) == p.opts.SinkBatch || i == len(recs)-1 {
				if len(batch) > 0 && !c.write(ctx, batch) {
					return
				}
				batch = batch[:0]
				if err := savePosition(path, r.Next); err != nil {
					p.log.Error("sink: position not stored", "err", err)
				}
			}
		}
	}
}

// write hands the plugin a batch until it acknowledges it; false when
// the connector stops first.
func (c *Connector) write(ctx context.Context, batch []*pluginpb.Message) bool {
	p := c.p
	req := &pluginpb.WriteRequest{Messages: batch}
	return c.retry(ctx, func() error {
		return p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, rpc pluginpb.PluginClient) error {
			_, err := rpc.Write(ctx, req)
			return err
		})
	})
}

// retry calls f until it succeeds, waiting with the restart backoff
// between attempts; false when ctx ends first.
func (c *Connector) retry(ctx context.Context, f func() error) bool {
	wait := c.p.opts.RestartMin
	for {
		err := f()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.p.log.Warn("connector retrying", "kind", c.kind, "after", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, c.p.opts.RestartMax)
	}
}

// runSource reads batches from the plugin, stores them and acknowledges
// them.
func (c *Connector) runSource(ctx context.Context, e *engine.Engine) {
	p := c.p
	wait := p.opts.SourceWait
	req := &pluginpb.ReadRequest{Max: int32(p.opts.SinkBatch), WaitMs: int32(wait / time.Millisecond)}
	for ctx.Err() == nil {
		var resp *pluginpb.ReadResponse
		if !c.retry(ctx, func() error {
			return p.call(ctx, wait+p.opts.CallTimeout, func(ctx context.Context, rpc pluginpb.PluginClient) (err error) {
				resp, err = rpc.Read(ctx, req)
				return err
			})
		}) {
			return
		}
		msgs := resp.GetMessages()
		if len(msgs) == 0 {
			continue
		}
		// One SendBatch per run of messages to one topic.
		for start := 0; start < len(msgs); {
			end := start + 1
			for end < len(msgs) && msgs[end].GetTopic() == msgs[start].GetTopic() {
				end++
			}
			run := make([]*message.Message, 0, end-start)
			for _, w := range msgs[start:end] {
				m := &message.Message{Topic: w.GetTopic(), Body: w.GetBody(), Flag: w.GetFlag()}
				m.Properties, _ = message.DecodeProperties(w.GetProperties())
				run = append(run, m)
			}
			closed := false
			if !c.retry(ctx, func() error {
				_, err := e.SendBatch(ctx, run, engine.AnyQueue)
				if errors.Is(err, engine.ErrClosed) {
					closed = true
					return nil
				}
				return err
			}) || closed {
				return
			}
			start = end
		}
		if !c.retry(ctx, func() error {
			return p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, rpc pluginpb.PluginClient) error {
				_, err := rpc.Ack(ctx, &pluginpb.AckRequest{})
				return err
			})
		}) {
			return
		}
	}
}
