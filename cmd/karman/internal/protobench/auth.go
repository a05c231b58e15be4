package protobench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/pflag"
)

// benchAuth is what an in-process Karman with --auth holds: a super user
// of its own to set it up with, the user the bench signs as (one policy
// allowing it everything, so that every check walks a normal user's
// policies) and others users with one policy each, on topics of their
// own.
type benchAuth struct {
	user, secret string
	others       int

	admin, adminSecret string
}

// configure turns --auth on with a super user of random secret.
func (ba *benchAuth) configure(fs *pflag.FlagSet) error {
	var b [16]byte
	rand.Read(b[:])
	ba.admin, ba.adminSecret = "karman-bench-admin", hex.EncodeToString(b[:])
	for name, v := range map[string]string{"auth": "true", "auth-init-user": ba.admin, "auth-init-secret": ba.adminSecret} {
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("bench: --%s: %w", name, err)
		}
	}
	return nil
}

// users creates the bench's user and the others through the name server
// at ns.
func (ba *benchAuth) users(ctx context.Context, ns string) error {
	c, err := admin.New(admin.Options{NameServers: []string{ns}, AccessKey: ba.admin, SecretKey: ba.adminSecret})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CreateUser(ctx, ba.user, ba.secret, "Normal"); err != nil {
		return fmt.Errorf("bench: create user %s: %w", ba.user, err)
	}
	if _, err := c.CreateACL(ctx, ba.user, admin.Policy{Resource: "*", Actions: []string{"All"}, Decision: "Allow"}); err != nil {
		return fmt.Errorf("bench: policy of %s: %w", ba.user, err)
	}
	for i := range ba.others {
		name := fmt.Sprintf("bench-user-%d", i)
		if _, err := c.CreateUser(ctx, name, "secret-"+name, "Normal"); err != nil {
			return fmt.Errorf("bench: create user %s: %w", name, err)
		}
		if _, err := c.CreateACL(ctx, name, admin.Policy{Resource: "Topic:bench-topic-" + name, Actions: []string{"Pub", "Sub"}, Decision: "Allow"}); err != nil {
			return fmt.Errorf("bench: policy of %s: %w", name, err)
		}
	}
	return nil
}
