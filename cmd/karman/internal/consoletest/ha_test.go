package consoletest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/ha"
)

// startHA starts a server with the broker, the name server and
// replication in role, and extra flags.
func startHA(t *testing.T, args ...string) *server.Server {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0",
		"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--log-level", "error"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv
}

// TestReplicationOnOverview: a master's overview lists its replica, in
// sync, and the replica's says whose replica it is; both name their role.
func TestReplicationOnOverview(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and a browser")
	}
	exe := chromium(t)
	master := startHA(t, "--namesrv-addr", "127.0.0.1:0", "--ha-role", "master", "--ha-addr", "127.0.0.1:0")
	var haAddr string
	for _, m := range master.Modules() {
		if h, ok := m.(*ha.Module); ok {
			haAddr = h.Addr().String()
		}
	}
	replica := startHA(t, "--namesrv-addr", "off", "--broker-namesrv", master.Addr("namesrv").String(), "--ha-role", "replica", "--ha-master", haAddr)

	aopts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), aopts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()

	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+master.Addr("http").String()+"/#/overview")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#node", "(master)")
	waitText(t, ctx, "#replication", "master · 1 replica connected")
	if row := waitText(t, ctx, "tr[data-replica]", "yes"); !strings.Contains(row, "0 B") {
		t.Errorf("the replica's row %q, want in sync with no lag", row)
	}
	// The cluster table: both brokers of the group, from the name
	// server, with their roles; the master's in-sync set holds both.
	waitText(t, ctx, "#cluster-source", "from name server "+master.Addr("namesrv").String())
	if row := waitText(t, ctx, `tr[data-broker="broker-a/0"]`, "this node"); !strings.Contains(row, "master") || !strings.Contains(row, master.Addr("broker").String()) {
		t.Errorf("the master's cluster row %q", row)
	}
	if row := waitText(t, ctx, "#cluster tbody tr:nth-child(2)", "replica"); !strings.Contains(row, replica.Addr("broker").String()) || !strings.Contains(row, "up") {
		t.Errorf("the replica's cluster row %q", row)
	}
	screenshot(t, ctx, "overview-master")

	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+replica.Addr("http").String()+"/#/overview")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#node", "(replica)")
	waitText(t, ctx, "#replication", "replica of "+haAddr+" · 0 B behind")
	waitText(t, ctx, "#cluster tbody tr.self", "replica")
	screenshot(t, ctx, "overview-replica")
}
