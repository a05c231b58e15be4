// Package remotingtest helps test remoting servers: requests whose
// extFields come from "key=value" lines, which fuzzers mutate well, sent
// to a server that must answer every one without a handler panicking;
// and waiting for a topic's route at a name server.
package remotingtest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// ExtLines writes h's extFields as "key=value" lines in key order, the
// form ParseExtLines reads: the seeds of a fuzz target.
func ExtLines(h wire.Header) string {
	ext := map[string]string{}
	h.EncodeFields(ext)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(ext)) {
		b.WriteString(k + "=" + ext[k] + "\n")
	}
	return b.String()
}

// ParseExtLines reads "key=value" lines into extFields; lines without
// '=' are skipped.
func ParseExtLines(lines string) map[string]string {
	ext := map[string]string{}
	for line := range strings.Lines(lines) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
			ext[k] = v
		}
	}
	return ext
}

// answerTimeout is how long a fuzzed request may take to be answered.
const answerTimeout = 10 * time.Second

// MustAnswer sends a request of code with the extFields of lines and
// body over p, and fails t unless the server answers it within 10 s
// with something other than the answer the peer gives for a handler
// that panicked.
func MustAnswer(t testing.TB, p *peer.Peer, code wire.RequestCode, lines string, body []byte) {
	t.Helper()
	req := wire.NewRequest(code, ParseExtLines(lines))
	req.Body = body
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("%s: no answer: %v", code, err)
	}
	if resp.ResponseCode() == wire.SystemError && strings.HasPrefix(resp.Remark, peer.HandlerPanicRemark) {
		t.Fatalf("%s: %s", code, resp.Remark)
	}
}

// CodeIndex returns code's place in codes, the byte a fuzz seed names it
// by; it panics when codes lacks it.
func CodeIndex(codes []wire.RequestCode, code wire.RequestCode) uint8 {
	i := slices.Index(codes, code)
	if i < 0 || i > 255 {
		panic("code not fuzzed: " + code.String())
	}
	return uint8(i)
}

// WaitRoute waits until the name server at namesrv has a route for topic:
// a topic created in the engine directly reaches the name servers with
// the broker's next registration, and a client that asks for its route
// before then falls back to the default topic's.
func WaitRoute(t testing.TB, namesrv, topic string) {
	t.Helper()
	p, err := peer.Dial(context.Background(), namesrv, peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		req := wire.NewRequest(wire.GetRouteInfoByTopic, nil)
		req.EncodeHeader(&wire.GetRouteInfoRequestHeader{Topic: topic})
		resp, err := p.Invoke(context.Background(), req)
		if err == nil && resp.ResponseCode() == wire.Success {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for %s after 15s: %v %v", topic, resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
