package consoletest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/chromedp/chromedp"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/remotingtest"
	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/broker"
	_ "github.com/karmanmq/karman/server/modules/namesrv"
)

// chromium finds the browser: $CHROMIUM, else chromium or
// chromium-browser on the PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on the PATH: the console's browser tests need it (Debian: apt-get install chromium; .ci/run installs it), or set CHROMIUM")
	return ""
}

// fixture is a server with real traffic: topic shop with messages from
// the Go client, group readers that consumed some and lags behind, and a
// dead letter of readers.
type fixture struct {
	srv        *server.Server
	eng        *engine.Engine
	base       string
	ids        []string
	deadLetter string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	err = opts.Flags.Parse([]string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0",
		"--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error",
		"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"})
	if err != nil {
		t.Fatal(err)
	}
	opts.LagInterval = 50 * time.Millisecond // the lag chart has samples before its page opens
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	f := &fixture{srv: srv, eng: srv.Engine(), base: "http://" + srv.Addr("http").String()}
	if err := f.eng.CreateTopic(meta.Topic{Name: "shop", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	ns := []string{srv.Addr("namesrv").String()}
	remotingtest.WaitRoute(t, ns[0], "shop")

	rlog.SetLogLevel("error")
	p, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		producer.WithGroupName("shop-producer"), producer.WithSendMsgTimeout(5*time.Second), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	send := func(n int) {
		for i := range n {
			m := primitive.NewMessage("shop", fmt.Appendf(nil, `{"order":%d,"item":"tea"}`, len(f.ids)))
			m.WithKeys([]string{fmt.Sprintf("order-%d", len(f.ids))})
			m.WithTag("paid")
			res, err := p.SendSync(ctx, m)
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			f.ids = append(f.ids, res.MsgID)
		}
	}
	send(6)

	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		consumer.WithGroupName("readers"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	err = c.Subscribe("shop", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if got.Add(int64(len(msgs))) == 6 {
				close(all)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("the consumer got %d of 6", got.Load())
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	send(4) // the lag

	// Message 2 is dead-lettered, as a consumer's send-back does once its
	// attempts are spent.
	m, err := f.eng.MessageByID(f.ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.SendBack(ctx, "readers", m.CommitLogOffset, engine.SendBackOptions{DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	f.deadLetter = f.ids[2]
	// The lag is at least the 4 sent after the consumer left (more if its
	// last commits did not reach the broker); the checks compare the page
	// with the engine's figure.
	waitFor(t, "readers' lag and its dead letter", func() bool { return f.lag(t) >= 4 && f.depth(t, "%DLQ%readers") == 1 },
		func() string { return fmt.Sprintf("lag %d, dead letters %d", f.lag(t), f.depth(t, "%DLQ%readers")) })
	return f
}

// lag is readers' lag in shop, from the engine.
func (f *fixture) lag(t *testing.T) int64 {
	t.Helper()
	offs, err := f.eng.ConsumerOffsets("readers", "shop")
	if err != nil {
		return -1
	}
	var lag int64
	for q := range int32(2) {
		end, err := f.eng.MaxOffset("shop", q)
		if err != nil {
			t.Fatal(err)
		}
		lag += end - offs[q]
	}
	return lag
}

// depth is the messages a topic holds; -1 when it does not exist.
func (f *fixture) depth(t *testing.T, topic string) int64 {
	t.Helper()
	tp, err := f.eng.Topic(topic)
	if err != nil {
		return -1
	}
	var n int64
	for q := range tp.Queues() {
		lo, _ := f.eng.MinOffset(topic, q)
		hi, _ := f.eng.MaxOffset(topic, q)
		n += hi - lo
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool, state ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			msg := ""
			for _, s := range state {
				msg += ": " + s()
			}
			t.Fatalf("timed out waiting for %s%s", what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenshot writes the page as NAME.png into the test's artifact
// directory (kept with go test -artifacts).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// text returns the text of the first element matching sel, once visible.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("wait for %s: %v", sel, err)
		}
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		// The page may redraw between the wait and the read, replacing
		// the node found: then look for it again.
		if err != nil && strings.Contains(err.Error(), "No node with given id") && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
}

// waitText waits until the text of sel contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		s := text(t, ctx, sel)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s says %q, want %q", sel, s, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConsoleInBrowser loads each page of the console in headless
// Chromium against a server with real traffic, checks what it shows
// against the engine, and clicks through create-topic, reset-offset and
// resend-dead-letter.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a browser")
	}
	exe := chromium(t)
	f := newFixture(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	// Overview: the counts, the front-ends and the charts.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/overview")); err != nil {
		t.Fatal(err)
	}
	cards := waitText(t, ctx, ".cards", "Topics")
	if !strings.Contains(cards, "broker: "+f.srv.Addr("broker").String()) {
		t.Errorf("overview does not show the broker's address: %q", cards)
	}
	if canvases, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("canvas").length`)); err != nil || canvases != 2 {
		t.Errorf("overview charts: %d (%v)", canvases, err)
	}
	waitText(t, ctx, "#node", "DefaultCluster / broker-a")
	// The modules compiled in: the broker running, MQTT turned off.
	if row := waitText(t, ctx, `tr[data-module="frontend.remoting"]`, "running"); !strings.Contains(row, "github.com/karmanmq/karman/server/modules/broker") {
		t.Errorf("the broker module's row %q lacks its package", row)
	}
	waitText(t, ctx, `tr[data-module="frontend.mqtt"]`, "off")
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("nav-mqtt").hidden`)); err != nil || visible {
		t.Errorf("the MQTT link is offered with MQTT off (%v)", err)
	}
	time.Sleep(2500 * time.Millisecond) // let the charts take a second sample, for the screenshot
	screenshot(t, ctx, "overview")

	// Topics: shop with its count; create a topic with the form.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/topics")); err != nil {
		t.Fatal(err)
	}
	row := waitText(t, ctx, `tr[data-topic="shop"]`, "shop")
	if !strings.Contains(row, fmt.Sprint(f.depth(t, "shop"))) {
		t.Errorf("shop's row %q does not show its %d messages", row, f.depth(t, "shop"))
	}
	err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#create-topic input[name="topicName"]`), "made-in-browser"),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name="queues"]`), "3"),
		chromedp.Click(chromedp.CSS(`#create-topic button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="made-in-browser"]`)))
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if tp, err := f.eng.Topic("made-in-browser"); err != nil || tp.ReadQueues != 3 || tp.WriteQueues != 3 {
		t.Errorf("the engine's made-in-browser: %+v, %v", tp, err)
	}
	// A bad name is refused with the API's message, and nothing is made.
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name="topicName"]`), "shop"),
		chromedp.Click(chromedp.CSS(`#create-topic button[type="submit"]`)))
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#toast", "topic shop already exists")
	screenshot(t, ctx, "topics")

	// Topic page: the queues.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/topics/shop")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "main", "readers")
	screenshot(t, ctx, "topic")

	// Groups: readers with its lag and dead letter.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/groups")); err != nil {
		t.Fatal(err)
	}
	row = waitText(t, ctx, `tr[data-group="readers"]`, "readers")
	lag := f.lag(t)
	if cells := strings.Fields(row); len(cells) < 4 || cells[2] != fmt.Sprint(lag) || cells[3] != "1" {
		t.Errorf("readers' row %q, want lag %d and 1 dead letter", row, lag)
	}
	screenshot(t, ctx, "groups")

	// Group page: lag, reset offset to the start, resend the dead letter.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/groups/readers")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "main", fmt.Sprintf("lag %d", lag))
	waitText(t, ctx, "main", "1 dead letters")
	// The lag chart starts with the server's samples, not the one point
	// the page took itself.
	points, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`canvas[aria-label="Lag over the last 10 minutes"]`), "data-points"))
	if n, _ := strconv.Atoi(points.Value); err != nil || n < 3 {
		t.Errorf("the lag chart drew %q points on its first load (%v), want the server's samples too", points.Value, err)
	}
	screenshot(t, ctx, "group")
	past := time.Now().Add(-time.Hour).Format("2006-01-02T15:04:05")
	err = chromedp.Do(ctx,
		chromedp.WaitReady(chromedp.CSS(`#reset-offset select[name="topic"] option[value="shop"]`)),
		chromedp.SetValue(chromedp.CSS(`#reset-offset select[name="topic"]`), "shop"),
		chromedp.SetValue(chromedp.CSS(`#reset-offset input[name="time"]`), past),
		chromedp.Click(chromedp.CSS(`#reset-offset button[type="submit"]`)))
	if err != nil {
		t.Fatalf("reset offset: %v", err)
	}
	total := f.depth(t, "shop")
	waitFor(t, "the reset to an hour ago", func() bool { return f.lag(t) == total })
	waitText(t, ctx, "main", fmt.Sprintf("lag %d", total))

	before := f.depth(t, "shop")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-dead-letter="%s"] button`, f.deadLetter))))
	if err != nil {
		t.Fatalf("resend: %v", err)
	}
	waitText(t, ctx, "#toast", "resent "+f.deadLetter+" to shop")
	waitFor(t, "the resent message", func() bool { return f.depth(t, "shop") == before+1 })
	screenshot(t, ctx, "group-after")

	// Messages: by id, with the body as JSON and hex.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/messages")); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#by-id input[name="msgId"]`), f.ids[1]),
		chromedp.Click(chromedp.CSS(`#by-id button`)))
	if err != nil {
		t.Fatal(err)
	}
	body := waitText(t, ctx, "main pre", `"item":"tea"`)
	// Its history: sent, stored, and readers' committed offset (reset
	// to the start above) not past it.
	waitText(t, ctx, `tr[data-event="stored"]`, "queue")
	if s := text(t, ctx, `tr[data-event="pending"]`); !strings.Contains(s, "readers") {
		t.Errorf("history row %q, want readers' pending consumption", s)
	}
	// and the pull that delivered it to readers' consumer, from the
	// engine's delivery history.
	if s := text(t, ctx, `tr[data-event="pull"]`); !strings.Contains(s, "readers") || !strings.Contains(s, "by remoting") {
		t.Errorf("history row %q, want readers' pull", s)
	}
	if !strings.Contains(body, `"order":1`) {
		t.Errorf("message body shown %q", body)
	}
	err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`select[aria-label="body view"]`), "hex"))
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('select[aria-label="body view"]').dispatchEvent(new Event("change"))`))
	}
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "main pre", "00000000  7b 22 6f 72")
	screenshot(t, ctx, "message")

	// Browse queue 0 from offset 0 and find by key.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base+"/#/messages?topic=shop&queue=0&from=0")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "main", "queue 0 holds offsets")
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#by-key input[name="topic"]`), "shop"),
		chromedp.SendKeys(chromedp.CSS(`#by-key input[name="key"]`), "order-3"),
		chromedp.Click(chromedp.CSS(`#by-key button`)))
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "main table:last-of-type", f.ids[3])
	screenshot(t, ctx, "messages")
}
