//go:build !race && unix

package compat

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestFilterSubsets sends 10,000 messages with mixed tags and properties
// and checks that a SQL92 consumer and a tag consumer each receive exactly
// their subset, while a consumer with an invalid expression is refused
// without disturbing them.
func TestFilterSubsets(t *testing.T) {
	k := startKarman(t)
	const topic, n = "FilterSubsets", 10000
	k.createTopic(topic, 4)
	tags := []string{"red", "green", "blue", "white"}
	region := []string{"eu", "us", "ap"}
	// The subsets, computed the way the expressions below read.
	wantSQL, wantTag := map[string]bool{}, map[string]bool{}
	for i := range n {
		tag, price, reg := tags[i%4], i%100, region[i%3]
		body := fmt.Sprintf("m-%d", i)
		// price >= 90 AND region IN ('eu','ap') AND TAGS <> 'blue', or the
		// message has flagged = 'true' (every 997th message).
		if (price >= 90 && reg != "us" && tag != "blue") || i%997 == 0 {
			wantSQL[body] = true
		}
		if tag == "red" || tag == "white" {
			wantTag[body] = true
		}
	}

	sqlGot, tagGot := newReceived(), newReceived()
	k.pushConsumer("filter-by-tag", topic, "red || white", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		tagGot.add(msgs...)
		return consumer.ConsumeSuccess
	})
	sqlConsumer := func(group, expr string, into *received) (func(), error) {
		c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{k.namesrv}), consumer.WithGroupName(group),
			consumer.WithInstance(instance("consumer")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
		if err != nil {
			return nil, err
		}
		err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: expr},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				into.add(msgs...)
				return consumer.ConsumeSuccess, nil
			})
		if err != nil {
			return nil, err
		}
		if err := c.Start(); err != nil {
			return nil, err
		}
		return func() { c.Shutdown() }, nil
	}
	stop, err := sqlConsumer("filter-by-sql", "(price >= 90 AND region IN ('eu', 'ap') AND TAGS <> 'blue') OR flagged = 'true'", sqlGot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// A group whose expression does not parse gets nothing and breaks
	// nothing: its pulls are refused with SUBSCRIPTION_PARSE_FAILED.
	badGot := newReceived()
	if stop, err := sqlConsumer("filter-bad-sql", "price >>> 1 AND", badGot); err == nil {
		t.Cleanup(stop)
	}

	p := k.producer()
	batch := make([]*primitive.Message, 0, 100)
	for i := range n {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("m-%d", i))).WithTag(tags[i%4])
		m.WithProperty("price", strconv.Itoa(i%100))
		m.WithProperty("region", region[i%3])
		if i%997 == 0 {
			m.WithProperty("flagged", "true")
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			p.send(batch...)
			batch = batch[:0]
		}
	}
	sqlGot.waitFor(t, "the SQL92 subset", 2*time.Minute, func() bool { return sqlGot.distinct() >= len(wantSQL) })
	tagGot.waitFor(t, "the tag subset", 2*time.Minute, func() bool { return tagGot.distinct() >= len(wantTag) })
	// A last message every good subscription takes proves nothing else is
	// still on its way.
	last := primitive.NewMessage(topic, []byte("last")).WithTag("red")
	last.WithProperty("flagged", "true")
	p.send(last)
	sqlGot.waitFor(t, "the last SQL92 message", time.Minute, func() bool { return sqlGot.count("last") == 1 })
	tagGot.waitFor(t, "the last tagged message", time.Minute, func() bool { return tagGot.count("last") == 1 })

	for name, c := range map[string]struct {
		got  *received
		want map[string]bool
	}{"SQL92": {sqlGot, wantSQL}, "tag": {tagGot, wantTag}} {
		if got := c.got.distinct() - 1; got != len(c.want) { // minus "last"
			t.Errorf("%s consumer received %d distinct messages, want %d", name, got, len(c.want))
		}
		for body := range c.want {
			if c.got.count(body) == 0 {
				t.Errorf("%s consumer missed %s", name, body)
				break
			}
		}
		for i := range n {
			body := fmt.Sprintf("m-%d", i)
			if !c.want[body] && c.got.count(body) > 0 {
				t.Errorf("%s consumer received %s, which does not match", name, body)
				break
			}
		}
	}
	if badGot.distinct() != 0 {
		t.Errorf("the consumer with an invalid expression received %d messages", badGot.distinct())
	}
}
