package packet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCaptureSeeds records what mosquitto_pub and mosquitto_sub send to a
// real mosquitto broker, and what it answers, through a recording proxy,
// and writes every packet as a FuzzReadPacket seed. It runs only with
// MQTT_CAPTURE_SEEDS=1 and the Debian mosquitto and mosquitto-clients
// packages installed; the seeds are committed in testdata.
func TestCaptureSeeds(t *testing.T) {
	if os.Getenv("MQTT_CAPTURE_SEEDS") == "" {
		t.Skip("set MQTT_CAPTURE_SEEDS=1 to capture fuzz seeds from mosquitto")
	}
	for _, bin := range []string{"mosquitto", "mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not on PATH", bin)
		}
	}
	brokerAddr := startMosquitto(t)
	rec := &recorder{}
	proxy := rec.listen(t, brokerAddr)
	host, port, _ := net.SplitHostPort(proxy)

	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		full := append([]string{"-h", host, "-p", port}, args[1:]...)
		out, err := exec.CommandContext(ctx, args[0], full...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for _, v := range []string{"mqttv31", "mqttv311", "mqttv5"} {
		// A subscriber waiting for three messages, then the publishers.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		subArgs := []string{"-h", host, "-p", port, "-V", v, "-q", "2", "-C", "3", "-t", "seed/+/x", "-t", "seed/#"}
		if v == "mqttv5" {
			subArgs = append(subArgs, "-D", "subscribe", "subscription-identifier", "7",
				"-D", "connect", "session-expiry-interval", "60", "-D", "connect", "receive-maximum", "20")
		}
		sub := exec.CommandContext(ctx, "mosquitto_sub", subArgs...)
		if err := sub.Start(); err != nil {
			t.Fatal(err)
		}
		rec.waitSubscribed(t, 1)
		pub := []string{"mosquitto_pub", "-V", v, "-t", "seed/a/x", "-m", "hello"}
		run(pub...)
		run(append(pub, "-q", "1", "-r", "-i", "publisher-with-a-long-client-identifier-0123456789")...)
		if v == "mqttv5" {
			run(append(pub, "-q", "2", "-D", "publish", "user-property", "k", "v", "-D", "publish", "user-property", "k", "v2",
				"-D", "publish", "content-type", "text/plain", "-D", "publish", "response-topic", "seed/reply",
				"-D", "publish", "correlation-data", "abc", "-D", "publish", "message-expiry-interval", "30",
				"-D", "publish", "payload-format-indicator", "1", "-D", "connect", "user-property", "who", "me",
				"--will-topic", "seed/will", "--will-payload", "gone", "--will-qos", "1", "--will-retain",
				"-D", "will", "will-delay-interval", "5", "-u", "user", "-P", "secret")...)
		} else {
			run(append(pub, "-q", "2", "-u", "user", "-P", "secret", "--will-topic", "seed/will", "--will-payload", "gone", "--will-qos", "1")...)
		}
		err := sub.Wait()
		cancel()
		if err != nil {
			t.Fatalf("mosquitto_sub %s: %v", v, err)
		}
		rec.resetSubscribed()
		// Clear the retained message, and a persistent session unsubscribing.
		run("mosquitto_pub", "-V", v, "-t", "seed/a/x", "-r", "-n")
		run("mosquitto_sub", "-V", v, "-c", "-i", "seed-"+v, "-t", "seed/$share", "-U", "seed/a/x", "-E")
	}
	run("mosquitto_sub", "-V", "mqttv5", "-t", "$share/group/seed/#", "-E")
	rec.close()

	dir := filepath.Join("testdata", "fuzz", "FuzzReadPacket")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	seen := map[string]bool{}
	streams := rec.streams()
	for i := 0; i+1 < len(streams); i += 2 {
		up, down := splitPackets(streams[i]), splitPackets(streams[i+1])
		if len(up) == 0 || up[0][0]>>4 != byte(CONNECT) {
			continue
		}
		// The level is the byte after the protocol name.
		_, size, _ := decodeVarint(up[0][1:], false)
		body := up[0][1+size:]
		version := body[2+(int(body[0])<<8|int(body[1]))]
		for side, pkts := range [][][]byte{up, down} {
			for j, raw := range pkts {
				v := version
				if side == 0 && j == 0 {
					v = 0
				}
				seed := append([]byte{v}, raw...)
				if seen[string(seed)] {
					continue
				}
				seen[string(seed)] = true
				name := fmt.Sprintf("mosquitto-v%d-%s-%02d", version, Type(raw[0]>>4), n)
				text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(seed)) + ")\n"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		// The whole client stream as one seed too.
		text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(append([]byte{0}, streams[i]...))) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("mosquitto-v%d-stream-%02d", version, n)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("wrote %d seeds", n)
}

// splitPackets cuts a captured stream at packet boundaries.
func splitPackets(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 1 {
		rl, size, err := decodeVarint(b[1:], false)
		if err != nil || 1+size+rl > len(b) {
			break
		}
		out = append(out, b[:1+size+rl])
		b = b[1+size+rl:]
	}
	return out
}

func startMosquitto(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	os.WriteFile(conf, []byte("listener "+port+" 127.0.0.1\nallow_anonymous true\n"), 0o644)
	cmd := exec.Command("mosquitto", "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto did not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder is a TCP proxy keeping both directions of every connection.
type recorder struct {
	mu         sync.Mutex
	l          net.Listener
	bufs       []*bytes.Buffer
	wg         sync.WaitGroup
	subscribed chan struct{}
}

type tee struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
	w   io.Writer
	on  func([]byte)
}

func (t *tee) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	if t.on != nil {
		t.on(p)
	}
	return t.w.Write(p)
}

func (r *recorder) listen(t *testing.T, backend string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.l = l
	r.subscribed = make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			up, down := &bytes.Buffer{}, &bytes.Buffer{}
			r.mu.Lock()
			r.bufs = append(r.bufs, up, down)
			r.mu.Unlock()
			onDown := func(p []byte) {
				if len(p) > 0 && p[0]>>4 == byte(SUBACK) {
					r.subscribed <- struct{}{}
				}
			}
			r.wg.Add(2)
			go func() {
				defer r.wg.Done()
				io.Copy(&tee{&r.mu, up, b, nil}, c)
				b.(*net.TCPConn).CloseWrite()
			}()
			go func() {
				defer r.wg.Done()
				io.Copy(&tee{&r.mu, down, c, onDown}, b)
				c.Close()
			}()
		}
	}()
	return l.Addr().String()
}

func (r *recorder) waitSubscribed(t *testing.T, n int) {
	for i := 0; i < n; i++ {
		select {
		case <-r.subscribed:
		case <-time.After(5 * time.Second):
			t.Fatal("no SUBACK seen")
		}
	}
}

func (r *recorder) resetSubscribed() {
	for {
		select {
		case <-r.subscribed:
		default:
			return
		}
	}
}

func (r *recorder) close() { r.l.Close(); r.wg.Wait() }

func (r *recorder) streams() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for _, b := range r.bufs {
		out = append(out, b.Bytes())
	}
	return out
}

// TestCapturedPackets decodes every packet captured from mosquitto and its
// clients, and from the paho clients (captured by the interop tests of
// bench/mqtt): real traffic must decode without error, and re-encode to the
// same size (or a shorter form) and to bytes that decode to the same packet (property order
// may differ).
func TestCapturedPackets(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzReadPacket", "mosquitto-*"))
	paho, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzReadPacket", "paho*"))
	files = append(files, paho...)
	if len(files) == 0 || len(paho) == 0 {
		t.Fatal("no captured seeds in testdata")
	}
	for _, f := range files {
		data := readSeed(t, f)
		version := data[0]
		raws := splitPackets(data[1:])
		if len(raws) == 0 {
			t.Fatalf("%s: no packet", f)
		}
		for _, raw := range raws {
			p, err := ReadPacket(bufio.NewReader(bytes.NewReader(raw)), version, 0)
			if err != nil {
				t.Fatalf("%s: %x: %v", filepath.Base(f), raw, err)
			}
			if c, ok := p.(*Connect); ok {
				version = c.Version
			}
			enc, err := p.AppendTo(nil, version)
			if err != nil {
				t.Fatalf("%s: encode: %v", filepath.Base(f), err)
			}
			// Acks, DISCONNECT and AUTH may come in a longer form than the
			// shortest the encoder writes (paho sends a success code and
			// an empty property list).
			short := map[Type]bool{PUBACK: true, PUBREC: true, PUBREL: true, PUBCOMP: true, DISCONNECT: true, AUTH: true}
			if len(enc) != len(raw) && !(short[p.Type()] && len(enc) < len(raw)) {
				t.Errorf("%s: %s re-encoded in %d bytes, captured %d", filepath.Base(f), p.Type(), len(enc), len(raw))
			}
			readV := version
			if p.Type() == CONNECT {
				readV = 0
			}
			p2, err := ReadPacket(bufio.NewReader(bytes.NewReader(enc)), readV, 0)
			if err != nil || !equalDecoded(p, p2) {
				t.Errorf("%s: %s does not survive a round trip: %v", filepath.Base(f), p.Type(), err)
			}
		}
	}
}

func readSeed(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(strings.TrimPrefix(string(b), "go test fuzz v1\n"))
	s = strings.TrimSuffix(strings.TrimPrefix(s, "[]byte("), ")")
	u, err := strconv.Unquote(s)
	if err != nil || u == "" {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(u)
}
