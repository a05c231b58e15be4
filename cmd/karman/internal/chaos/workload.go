package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// Properties the workload sets on every message.
const (
	propKey = "CHAOS_KEY"
	propSeq = "CHAOS_SEQ"
)

// WorkloadOptions configure the producers and the consumer.
type WorkloadOptions struct {
	// Keys is the number of message keys (8); key i goes to group i%2,
	// queue i/2 modulo the queues, and one goroutine sends its messages
	// one after the other, so that their order is the send order.
	Keys int
	// Rate is the target of sends per second over all keys (200).
	Rate int
	// SendTimeout bounds one send (3 s).
	SendTimeout time.Duration
}

func (o *WorkloadOptions) ensureDefaults() {
	if o.Keys <= 0 {
		o.Keys = 8
	}
	if o.Rate <= 0 {
		o.Rate = 200
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 3 * time.Second
	}
}

// workload is the running producers and consumer with their history.
type workload struct {
	opts     WorkloadOptions
	producer rocketmq.Producer
	consumer rocketmq.PushConsumer

	mu         sync.Mutex
	sends      []Send
	deliveries []Delivery

	stop    chan struct{}
	senders sync.WaitGroup
}

// startWorkload starts a push consumer of a new group on Topic and the
// producers, with one client instance (so one route table, refreshed on
// the client's 30 s timer) for both.
func startWorkload(nameServers []string, opts WorkloadOptions) (*workload, error) {
	opts.ensureDefaults()
	b := make([]byte, 4)
	rand.Read(b)
	run := hex.EncodeToString(b)
	instance := "chaos-" + run
	w := &workload{opts: opts, stop: make(chan struct{})}
	c, err := newConsumer(nameServers, "chaos-consumer-"+run, instance, func(d Delivery) {
		w.mu.Lock()
		w.deliveries = append(w.deliveries, d)
		w.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer(nameServers),
		producer.WithGroupName("chaos-producer-"+run),
		producer.WithInstanceName(instance),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(opts.SendTimeout),
		producer.WithQueueSelector(producer.NewManualQueueSelector()),
	)
	if err != nil {
		return nil, fmt.Errorf("chaos: producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start the producer: %w", err)
	}
	w.producer = p
	if err := c.Start(); err != nil {
		p.Shutdown()
		return nil, fmt.Errorf("chaos: start the consumer: %w", err)
	}
	w.consumer = c
	return w, nil
}

// newConsumer returns a push consumer of group on Topic, from the first
// offset, that hands every delivery of the workload's messages to
// record; it is not started.
func newConsumer(nameServers []string, group, instance string, record func(Delivery)) (rocketmq.PushConsumer, error) {
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer(nameServers),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
	)
	if err != nil {
		return nil, fmt.Errorf("chaos: consumer: %w", err)
	}
	err = c.Subscribe(Topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		now := time.Now()
		for _, m := range msgs {
			seq, err := strconv.Atoi(m.GetProperty(propSeq))
			if err != nil || m.Queue == nil {
				continue // not the workload's
			}
			record(Delivery{Key: m.GetProperty(propKey), Seq: seq,
				Group: m.Queue.BrokerName, Queue: m.Queue.QueueId, Offset: m.QueueOffset, At: now})
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: subscribe: %w", err)
	}
	return c, nil
}

// finalRead reads the whole topic once more with a consumer of a new
// group, which asks the name servers for routes as it starts, so that it
// reads what the groups' current masters hold. It returns once every
// message of want was delivered, or once the timeout passed.
func finalRead(ctx context.Context, nameServers []string, want []msgID, timeout time.Duration) (map[msgID]bool, error) {
	b := make([]byte, 4)
	rand.Read(b)
	run := hex.EncodeToString(b)
	var (
		mu   sync.Mutex
		seen = map[msgID]bool{}
	)
	record := func(d Delivery) {
		mu.Lock()
		defer mu.Unlock()
		seen[msgID{d.Key, d.Seq}] = true
	}
	// A name server restarted by the fault knows no routes until the
	// brokers register with it again, and the client asks one of them:
	// start again until the one it asks knows the topic.
	var c rocketmq.PushConsumer
	err := poll(ctx, "the final reader's start", timeout, 500*time.Millisecond, func() error {
		var err error
		if c, err = newConsumer(nameServers, "chaos-final-"+run, "chaos-final-"+run, record); err != nil {
			return err
		}
		if err = c.Start(); err != nil {
			c.Shutdown()
			return fmt.Errorf("%w: %v", errNotReady, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: start the final reader: %w", err)
	}
	defer c.Shutdown()
	poll(ctx, "the final read", timeout, 100*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range want {
			if !seen[id] {
				return errNotReady
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(seen), nil
}

// keyPlace returns key i's name, group and queue.
func keyPlace(i int) (string, string, int) {
	return fmt.Sprintf("key-%02d", i), Groups[i%len(Groups)], (i / len(Groups)) % QueuesPerGroup
}

// produce starts one sender per key; each sends until stopProducing.
func (w *workload) produce() {
	interval := time.Duration(w.opts.Keys) * time.Second / time.Duration(w.opts.Rate)
	for i := range w.opts.Keys {
		key, group, queue := keyPlace(i)
		w.senders.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for seq := 0; ; seq++ {
				select {
				case <-w.stop:
					return
				case <-tick.C:
				}
				m := primitive.NewMessage(Topic, fmt.Appendf(nil, "%s/%d", key, seq)).WithKeys([]string{key})
				m.WithProperty(propKey, key)
				m.WithProperty(propSeq, strconv.Itoa(seq))
				m.Queue = &primitive.MessageQueue{Topic: Topic, BrokerName: group, QueueId: queue}
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), w.opts.SendTimeout)
				res, err := w.producer.SendSync(ctx, m)
				cancel()
				s := Send{Key: key, Seq: seq, Group: group, Queue: queue, Start: start, End: time.Now()}
				s.Acked = err == nil && res != nil && res.Status == primitive.SendOK
				if s.Acked {
					s.By = storeHost(res.OffsetMsgID)
				}
				w.mu.Lock()
				w.sends = append(w.sends, s)
				w.mu.Unlock()
			}
		})
	}
}

// stopProducing stops the senders and waits for their last sends.
func (w *workload) stopProducing() {
	close(w.stop)
	w.senders.Wait()
}

// history returns copies of the sends and deliveries so far.
func (w *workload) history() ([]Send, []Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sends), slices.Clone(w.deliveries)
}

// shutdown stops the clients.
func (w *workload) shutdown() {
	w.consumer.Shutdown()
	w.producer.Shutdown()
}
