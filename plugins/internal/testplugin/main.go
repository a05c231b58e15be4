// Command testplugin is the plugin the host's tests run: an interceptor
// whose behaviour the messages choose, and a few ways of not being a
// good plugin, chosen by the environment.
//
// BeforeStore marks every message with the property seen-by (the
// plugin's name) and pid (its process id); a message with the property
// reject rejects its batch with that reason; one with hang makes the
// call hang for good (ignoring its context); one with fail makes the
// call fail with an error. Configured with check=NAME, BeforeStore only
// checks that every message has the property NAME, and changes nothing.
// BeforeDeliver drops messages with the property drop.
//
// KARMAN_TESTPLUGIN=version serves protocol version 99; =garbage prints
// a line that is not a handshake; =exit exits at once; =auth serves an
// Authenticator instead, which lets every client in and returns the
// credentials it was given as the principal's attributes.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/plugins/shared"
)

type testPlugin struct {
	name  string
	check string // config check: only check that each message has this property
}

func (t *testPlugin) Configure(_ context.Context, name string, cfg map[string]string) (shared.Settings, error) {
	t.name, t.check = name, cfg["check"]
	if cfg["refuse"] != "" {
		return shared.Settings{}, errors.New("refused: " + cfg["refuse"])
	}
	return shared.Settings{Bodies: cfg["bodies"] == "true"}, nil
}

func (t *testPlugin) BeforeStore(ctx context.Context, b *shared.StoreBatch) error {
	if t.check != "" {
		for i, m := range b.Messages {
			if _, ok := m.Properties[t.check]; !ok {
				return shared.Reject(fmt.Sprintf("message %d has no %s", i, t.check))
			}
		}
		return nil
	}
	for _, m := range b.Messages {
		if r, ok := m.Properties["reject"]; ok {
			return shared.Reject(r)
		}
		if _, ok := m.Properties["hang"]; ok {
			for {
				time.Sleep(time.Hour)
			}
		}
		if f, ok := m.Properties["fail"]; ok {
			return fmt.Errorf("failing as asked: %s", f)
		}
		m.Properties["seen-by"] = t.name
		m.Properties["pid"] = strconv.Itoa(os.Getpid())
	}
	return nil
}

func (t *testPlugin) BeforeDeliver(_ context.Context, b *shared.DeliverBatch) error {
	for i, m := range b.Messages {
		if _, ok := m.Properties["drop"]; ok {
			b.Drop(i)
		}
	}
	return nil
}

// echoAuth is the Authenticator of KARMAN_TESTPLUGIN=auth.
type echoAuth struct{}

func (echoAuth) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	attrs := map[string]string{"protocol": c.Protocol, "username": c.Username, "password": string(c.Password), "client_id": c.ClientID}
	name := c.Username
	if cert := c.Certificate; cert != nil {
		sum := sha256.Sum256(cert.Raw)
		attrs["cert_cn"], attrs["cert_subject"], attrs["cert_sha256"] = cert.Subject.CommonName, cert.Subject.String(), hex.EncodeToString(sum[:])
		name = "cert:" + cert.Subject.CommonName
	}
	return hook.Principal{Name: name, Attributes: attrs}, nil
}

func main() {
	switch os.Getenv("KARMAN_TESTPLUGIN") {
	case "auth":
		shared.Serve(echoAuth{})
		return
	case "version":
		h := shared.Handshake
		h.ProtocolVersion = 99
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: h,
			Plugins:         shared.PluginMap(&testPlugin{}),
			GRPCServer:      plugin.DefaultGRPCServer,
		})
		return
	case "garbage":
		fmt.Println("hello, I am not a plugin")
		time.Sleep(time.Minute)
		return
	case "exit":
		os.Exit(2)
	}
	shared.Serve(&testPlugin{})
}
