package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func Example() {
	dir, err := os.MkdirTemp("", "karman-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e, err := engine.Open(dir, &engine.Options{SegmentSize: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	if err := e.CreateTopic(meta.Topic{Name: "orders", ReadQueues: 1, WriteQueues: 1}); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m := &message.Message{Topic: "orders", Body: []byte("order 42 paid")}
	m.SetTags("paid")
	m.SetKeys([]string{"order-42"})
	res, err := e.Send(ctx, m)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored at queue", res.QueueID, "offset", res.QueueOffset)

	// Pulls see a message once it is indexed; WaitForArrival blocks until then.
	if err := e.WaitForArrival(ctx, "orders", 0, 0); err != nil {
		log.Fatal(err)
	}
	paid, err := engine.TagFilter("paid || refunded")
	if err != nil {
		log.Fatal(err)
	}
	got, err := e.Pull(ctx, "orders", 0, 0, 32, paid)
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range got.Records {
		msg, _, err := message.DecodeStored(rec)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s [%s] %s\n", msg.Topic, msg.Tags(), msg.Body)
	}
	fmt.Println("next offset", got.NextOffset)
	// Output:
	// stored at queue 0 offset 0
	// orders [paid] order 42 paid
	// next offset 1
}
