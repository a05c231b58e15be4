//go:build !race && linux

package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/protocol/remoting/broker"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory, unmounted
// when the test ends (after the processes using it, whose clean-ups were
// registered later, are gone). It skips the test where mounting is not
// permitted.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("the disk-full tests mount a small tmpfs, which needs root: mount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// diskSpace returns the free and total bytes of the file system holding
// dir, as df counts them (and karman too).
func diskSpace(t *testing.T, dir string) (free, total uint64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	bs := uint64(st.Bsize)
	return st.Bavail * bs, (st.Blocks - st.Bfree + st.Bavail) * bs
}

// fillDisk writes zeros to a new file at path until the file system has
// at most leave bytes free, or, with leave 0, until a write fails with
// ENOSPC.
func fillDisk(t *testing.T, path string, leave uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil && !(leave == 0 && errors.Is(err, syscall.ENOSPC)) {
		t.Fatal(err)
	}
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		free, _ := diskSpace(t, filepath.Dir(path))
		if leave > 0 && free <= leave {
			return
		}
		n := uint64(len(buf))
		if leave > 0 {
			n = min(n, free-leave)
		}
		if _, err := f.Write(buf[:n]); err != nil {
			if leave == 0 && errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// healthz is the JSON /healthz answers.
type healthz struct {
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	Since     string `json:"since"`
	DiskUsed  uint64 `json:"diskUsedBytes"`
	DiskTotal uint64 `json:"diskTotalBytes"`
}

// get fetches path from the HTTP endpoint and returns the status code and
// body.
func (k *karman) get(path string) (int, string) {
	k.t.Helper()
	if k.http == "" {
		k.t.Fatal("serve announced no HTTP address")
	}
	resp, err := http.Get("http://" + k.http + path)
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		k.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// waitHealth polls /healthz until it answers status with a reason that
// holds reason, and returns the answer.
func (k *karman) waitHealth(status, reason string) (int, healthz, string) {
	k.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := k.get("/healthz")
		var h healthz
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			k.t.Fatalf("/healthz answered %d %q, not JSON: %v", code, body, err)
		}
		if h.Status == status && strings.Contains(h.Reason, reason) {
			return code, h, body
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("/healthz still answers %d %s, want status %q with a reason naming %q", code, body, status, reason)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// metric returns the value of an unlabelled metric from /metrics.
func (k *karman) metric(name string) string {
	k.t.Helper()
	code, body := k.get("/metrics")
	if code != http.StatusOK {
		k.t.Fatalf("/metrics answered %d", code)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	k.t.Fatalf("/metrics has no %s", name)
	return ""
}

// trySend sends one message synchronously and returns the client's error.
func (p *producerClient) trySend(topic, body string) error {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	if err == nil && res.Status != primitive.SendOK {
		err = fmt.Errorf("send status %v", res)
	}
	return err
}

// checkSendRefused fails the test unless err is the broker's answer to a send
// on a full disk: SERVICE_NOT_AVAILABLE (14) saying the disk is full.
func checkSendRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the send succeeded", what)
	}
	if msg := err.Error(); !strings.Contains(msg, "CODE: 14") || !strings.Contains(msg, "disk full") {
		t.Fatalf("%s: send failed with %q, want CODE: 14 (SERVICE_NOT_AVAILABLE) saying the disk is full", what, msg)
	}
}

// TestDiskFull runs the binary on a small tmpfs that a filler file fills,
// with the Go clients, and the gRPC producer of the Node.js client:
//
//   - above --disk-full-ratio, sends are refused with SERVICE_NOT_AVAILABLE
//     and the reason, /healthz answers 503 disk-full with it, /metrics
//     has karman_disk_full 1, and a push consumer consumes every message
//     acknowledged before;
//   - with the disk truly full, the same, and a gRPC send fails with
//     INTERNAL_SERVER_ERROR; everything acknowledged can still be pulled;
//   - once the filler is deleted, without a restart, sends succeed again,
//     /healthz is 200 {"status":"ok"}, karman_disk_full 0, and the
//     consumer gets the new messages;
//   - killed with SIGKILL on a full disk, a restart fails fast with a
//     clear message and a non-zero exit while the disk stays full, and
//     once space is freed, it starts and holds every acknowledged message
//     once.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	root := mountTmpfs(t, 64<<20)
	dir := filepath.Join(root, "data")
	args := []string{"--data", dir, "--segment-size", "4MiB", "--max-message-size", "1MiB",
		"--disk-check-interval", "20ms", "--disk-reserve", "1MiB", "--retention-disk-ratio", "1"}
	k := startBinary(t, args...)
	const topic, group = "DiskFullTopic", "disk-full-push"
	k.createTopic(topic, 1)
	// Groups are made before the disk fills: creating one is a write.
	for _, g := range []string{group, "compat-inspector"} {
		k.createGroup(broker.SubscriptionGroupConfig{GroupName: g, ConsumeEnable: true, RetryMaxTimes: 16})
	}
	body := func(i int) string { return fmt.Sprintf("df-%03d-%s", i, strings.Repeat("x", 1000)) }
	p := k.producer(producer.WithRetry(0))
	var acked []string
	for i := range 100 {
		b := body(i)
		if err := p.trySend(topic, b); err != nil {
			t.Fatalf("send on an empty disk: %v", err)
		}
		acked = append(acked, b)
	}
	if code, _, body := k.waitHealth("ok", ""); code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Fatalf("/healthz on an empty disk: %d %q", code, body)
	}

	// Above the full ratio (0.90): sends refused, consumers go on.
	filler := filepath.Join(root, "filler")
	_, total := diskSpace(t, root)
	fillDisk(t, filler, total/20)
	code, h, _ := k.waitHealth("disk-full", "full ratio")
	if code != http.StatusServiceUnavailable || !strings.Contains(h.Reason, "full ratio 0.90") || !strings.Contains(h.Reason, dir) ||
		h.DiskTotal == 0 || h.DiskUsed < h.DiskTotal*9/10 || h.Since == "" {
		t.Fatalf("/healthz above the full ratio: %d %+v; want 503 naming the full ratio, the directory and the figures", code, h)
	}
	checkSendRefused(t, "above the full ratio", p.trySend(topic, "refused-1"))
	if v := k.metric("karman_disk_full"); v != "1" {
		t.Fatalf("karman_disk_full %s above the full ratio, want 1", v)
	}
	got := newReceived()
	c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every acknowledged message above the full ratio", time.Minute, func() bool { return got.distinct() == len(acked) })

	// Truly full: every write refused, reads served.
	fillDisk(t, filler+"2", 0)
	code, h, _ = k.waitHealth("disk-full", "reserve")
	if code != http.StatusServiceUnavailable || !strings.Contains(h.Reason, "below the 1.0 MiB reserve") {
		t.Fatalf("/healthz on a full disk: %d %+v", code, h)
	}
	checkSendRefused(t, "on a full disk", p.trySend(topic, "refused-2"))
	if v := k.metric("karman_disk_full"); v != "1" {
		t.Fatalf("karman_disk_full %s on a full disk, want 1", v)
	}
	grpcRefused := k.nodeTrySend(topic, []outMessage{{Body: "grpc-refused"}})[0]
	if e := grpcRefused.Error; e == nil || e.Code == nil || *e.Code != codeInternalServerError || !strings.Contains(e.Message, "disk full") {
		t.Fatalf("gRPC send on a full disk: %+v, want INTERNAL_SERVER_ERROR saying the disk is full", grpcRefused)
	}
	if n := len(k.drainQueue(topic, len(acked))); n != len(acked) {
		t.Fatalf("pulled %d messages on a full disk, want %d", n, len(acked))
	}

	// Space freed: writes come back without a restart.
	os.Remove(filler)
	os.Remove(filler + "2")
	if code, _, body := k.waitHealth("ok", ""); code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Fatalf("/healthz once space is freed: %d %q", code, body)
	}
	if v := k.metric("karman_disk_full"); v != "0" {
		t.Fatalf("karman_disk_full %s once space is freed, want 0", v)
	}
	for i := 100; i < 120; i++ {
		b := body(i)
		if err := p.trySend(topic, b); err != nil {
			t.Fatalf("send once space is freed: %v", err)
		}
		acked = append(acked, b)
	}
	got.waitFor(t, "the messages sent once space was freed", time.Minute, func() bool { return got.distinct() == len(acked) })
	for _, b := range acked {
		if got.count(b) == 0 {
			t.Fatalf("the push consumer never got %.6s", b)
		}
	}
	if n := got.distinct(); n != len(acked) {
		t.Fatalf("the push consumer got %d different messages, want the %d acknowledged (refused sends stored?)", n, len(acked))
	}
	c.Shutdown()

	// Killed on a full disk: a restart fails fast while it stays full.
	fillDisk(t, filler, 0)
	k.waitHealth("disk-full", "reserve")
	k.kill()
	p.p.Shutdown()
	stderr, elapsed := runBinaryFails(t, 20*time.Second, slices.Concat([]string{"serve"}, listenArgs, args)...)
	if elapsed > 10*time.Second {
		t.Errorf("a start on a full disk took %s to fail", elapsed)
	}
	if !strings.Contains(stderr, "disk full") || !strings.Contains(stderr, "free space") || !strings.Contains(stderr, dir) {
		t.Errorf("a start on a full disk said:\n%s\nwant it to say the disk is full, to free space, and name %s", stderr, dir)
	}
	t.Logf("a start on a full disk failed in %s: %s", elapsed.Round(time.Millisecond), strings.TrimSpace(stderr))

	// Space freed: it starts and lost nothing acknowledged.
	os.Remove(filler)
	k = startBinary(t, args...)
	if code, _, body := k.waitHealth("ok", ""); code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Fatalf("/healthz after the restart: %d %q", code, body)
	}
	if ends := k.queueEnds(topic, 1); ends[0] != int64(len(acked)) {
		t.Fatalf("after the restart the queue ends at %d, want the %d acknowledged messages", ends[0], len(acked))
	}
	stored := map[string]int{}
	for _, m := range k.drainQueue(topic, len(acked)) {
		stored[string(m.Body)]++
	}
	for _, b := range acked {
		if stored[b] != 1 {
			t.Errorf("after the restart %.6s is stored %d times, want once", b, stored[b])
		}
	}
}

// codeInternalServerError is the gRPC API's INTERNAL_SERVER_ERROR.
const codeInternalServerError = 50001

// runBinaryFails runs the karman binary with args, expecting it to exit
// with an error within timeout, and returns its standard error and how
// long it ran.
func runBinaryFails(t *testing.T, timeout time.Duration, args ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, karmanBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	err := cmd.Run()
	elapsed := time.Since(began)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("karman %s still ran after %s (killed)\nstderr:\n%s", strings.Join(args, " "), timeout, stderr.String())
	case err == nil:
		t.Fatalf("karman %s exited 0\nstderr:\n%s", strings.Join(args, " "), stderr.String())
	case !errors.As(err, &ee) || ee.ExitCode() <= 0:
		t.Fatalf("karman %s: %v", strings.Join(args, " "), err)
	}
	return stderr.String(), elapsed
}
