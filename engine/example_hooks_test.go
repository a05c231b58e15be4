package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// tenantOnly rejects messages without a tenant and marks the others.
type tenantOnly struct{}

func (tenantOnly) BeforeStore(ctx context.Context, b *hook.StoreBatch) error {
	for _, m := range b.Messages {
		if m.Property("tenant") == "" {
			return hook.Reject("message without a tenant")
		}
		m.SetProperty("checked", "1")
	}
	return nil
}

func Example_hooks() {
	dir, err := os.MkdirTemp("", "karman-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e, err := engine.Open(dir, &engine.Options{Hooks: []any{tenantOnly{}}})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateTopic(meta.Topic{Name: "orders", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	_, err = e.Send(ctx, &message.Message{Topic: "orders", Body: []byte("anonymous")})
	fmt.Println(errors.Is(err, engine.ErrRejected), err)

	m := &message.Message{Topic: "orders", Body: []byte("order 42")}
	m.SetProperty("tenant", "acme")
	res, err := e.Send(ctx, m)
	if err != nil {
		log.Fatal(err)
	}

	// Follow the commit log from the stored record.
	f, err := e.Follow(res.CommitLogOffset)
	if err != nil {
		log.Fatal(err)
	}
	recs, err := f.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	got, _, err := message.DecodeStored(recs[0].Data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s tenant=%s checked=%s\n", got.Body, got.Property("tenant"), got.Property("checked"))
	// Output:
	// true engine: send to orders: rejected: message without a tenant
	// order 42 tenant=acme checked=1
}
