package enginebench

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// txnGroup is the producer group of the transactional messages.
const txnGroup = "KarmanBenchTxnGroup"

// sendPhase sends Count plain messages, one Send each, from Producers
// goroutines: the baseline of the txn phase.
func (b *bench) sendPhase(ctx context.Context) (*Result, error) {
	r, err := b.sendAll(ctx, "send", b.topic, false)
	if err != nil {
		return nil, err
	}
	b.sendRate = r.MsgsPerSec
	return r, nil
}

// txnPhase sends Count transactional messages to a second topic from
// Producers goroutines: each a half message committed with EndTransaction
// as soon as Send returns.
func (b *bench) txnPhase(ctx context.Context) (*Result, error) {
	topic := b.topic + "_txn"
	if err := b.eng.CreateTopic(meta.Topic{Name: topic, ReadQueues: b.o.Queues, WriteQueues: b.o.Queues, Perm: meta.PermRW}); err != nil {
		return nil, fmt.Errorf("enginebench: create topic: %w", err)
	}
	r, err := b.sendAll(ctx, "txn", topic, true)
	if err != nil {
		return nil, err
	}
	if b.sendRate > 0 {
		r.Ratio = round(r.MsgsPerSec / b.sendRate)
	}
	return r, nil
}

// sendAll sends Count messages to topic from Producers goroutines,
// committing each as a transaction when txn, then checks that the topic
// holds every one exactly once. Latency is per message: Send, or Send and
// EndTransaction.
func (b *bench) sendAll(ctx context.Context, phase, topic string, txn bool) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	size := max(b.o.Size, seqSize)
	hists := make([]latency.Histogram, b.o.Producers)
	var wg sync.WaitGroup
	began, cpu := time.Now(), cpuTime()
	for p := range b.o.Producers {
		wg.Go(func() {
			if err := b.sendSeqs(ctx, topic, int64(p), txn, size, &hists[p]); err != nil {
				fail.set(err)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if fail.err != nil {
		return nil, fail.err
	}

	began = time.Now()
	if err := b.eng.WaitDispatched(ctx); err != nil {
		return nil, fmt.Errorf("enginebench: wait for dispatch: %w", err)
	}
	dispatch := round(float64(time.Since(began).Microseconds()) / 1e3)
	if err := b.checkOnce(ctx, topic, size); err != nil {
		return nil, fmt.Errorf("enginebench: %s: %w", phase, err)
	}

	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	r := &Result{Phase: phase, Batch: 1, Producers: b.o.Producers, Flush: b.o.Flush.String(), DispatchMs: &dispatch}
	summarize(r, &h, b.o.Count, size, elapsed, cpu)
	return r, nil
}

// sendSeqs sends messages first, first+Producers, ... below Count to
// topic, each body starting with its sequence number.
func (b *bench) sendSeqs(ctx context.Context, topic string, first int64, txn bool, size int, h *latency.Histogram) error {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// The engine does not keep or change a message's properties.
	var props map[string]string
	if txn {
		props = map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: txnGroup}
	}
	var m message.Message
	for seq := first; seq < b.o.Count; seq += int64(b.o.Producers) {
		binary.BigEndian.PutUint64(body, uint64(seq))
		m = message.Message{Topic: topic, Body: body, BornTimestamp: time.Now().UnixMilli(), Properties: props}
		began := time.Now()
		res, err := b.eng.Send(ctx, &m)
		if err != nil {
			return fmt.Errorf("enginebench: send message %d: %w", seq, err)
		}
		if txn {
			err = b.eng.EndTransaction(ctx, engine.EndTransactionRequest{
				ProducerGroup:   txnGroup,
				CommitLogOffset: res.CommitLogOffset,
				QueueOffset:     res.QueueOffset,
				Decision:        engine.Commit,
			})
			if err != nil {
				return fmt.Errorf("enginebench: commit message %d: %w", seq, err)
			}
		}
		h.Record(time.Since(began))
	}
	return nil
}

// checkOnce pulls every queue of topic and checks that it holds messages
// 0..Count-1 of size bytes, each once, none of them a half message.
func (b *bench) checkOnce(ctx context.Context, topic string, size int) error {
	seen := makeSeenSet([]int64{b.o.Count})
	var total int64
	for q := range b.o.Queues {
		off, err := b.eng.MinOffset(topic, q)
		if err != nil {
			return fmt.Errorf("queue %d: %w", q, err)
		}
		end, err := b.eng.MaxOffset(topic, q)
		if err != nil {
			return fmt.Errorf("queue %d: %w", q, err)
		}
		for off < end {
			res, err := b.eng.Pull(ctx, topic, q, off, PullBatch, nil)
			if err != nil {
				return fmt.Errorf("pull queue %d at %d: %w", q, off, err)
			}
			if len(res.Records) == 0 || res.NextOffset <= off {
				return fmt.Errorf("pull queue %d at %d made no progress (next %d, max %d)", q, off, res.NextOffset, end)
			}
			for _, rec := range res.Records {
				if err := checkRecord(rec, size, b.o.Count, seen); err != nil {
					res.Release()
					return fmt.Errorf("queue %d: %w", q, err)
				}
			}
			total += int64(len(res.Records))
			off = res.NextOffset
			res.Release()
		}
	}
	if marked := seen.count(); total != b.o.Count || marked != b.o.Count {
		return fmt.Errorf("the topic holds %d messages (%d distinct), sent %d", total, marked, b.o.Count)
	}
	return nil
}

// checkRecord checks one stored record of checkOnce and marks its
// sequence number in seen.
func checkRecord(rec []byte, size int, count int64, seen *seenSet) error {
	hd, err := message.PeekStored(rec)
	if err != nil {
		return err
	}
	if len(hd.Body) != size {
		return fmt.Errorf("message at offset %d has %d bytes, sent %d", hd.QueueOffset, len(hd.Body), size)
	}
	if _, half := hd.Property(message.PropertyTransactionPrepared); half {
		return fmt.Errorf("message at offset %d is still a half message", hd.QueueOffset)
	}
	seq := int64(binary.BigEndian.Uint64(hd.Body))
	if seq < 0 || seq >= count {
		return fmt.Errorf("message at offset %d claims to be number %d of %d", hd.QueueOffset, seq, count)
	}
	if err := seen.mark(0, seq); err != nil {
		return fmt.Errorf("message %d stored twice (again at offset %d)", seq, hd.QueueOffset)
	}
	return nil
}
