package plugins_test

import (
	"context"
	"log"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/plugins"
)

// Load a plugin, install its hooks in the engine and start its
// connectors with the open engine.
func Example() {
	spec, err := plugins.ParseSpec("hook=./webhook,url=http://127.0.0.1:8080/in,on-failure=skip")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	p, err := plugins.Load(ctx, spec, plugins.Options{})
	if err != nil {
		log.Fatal(err) // matches ErrNotFound, ErrChecksum, ErrHandshake or ErrStart
	}
	defer p.Close()

	e, err := engine.Open("./data", &engine.Options{Hooks: p.Hooks()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	for _, c := range p.Connectors() {
		if err := c.Start(ctx, e); err != nil {
			log.Fatal(err)
		}
	}
	// ... serve; Close stops the connectors and the plugin.
}
