package transport_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"
)

// A flood is a raw connection whose frames are read on a goroutine of
// their own while the test writes as fast as it can.
type flood struct {
	*rawClient
	goAway chan http2.ErrCode // the first GOAWAY's code
	ended  chan struct{}      // closed once reading fails: the server closed the connection
	resets atomic.Int64       // RST_STREAM frames received
}

// startFlood dials addr; with read false nothing is read from the
// connection at all, as from a client that never reads.
func startFlood(t *testing.T, addr string, read bool) *flood {
	t.Helper()
	f := &flood{rawClient: dialRaw(t, addr), goAway: make(chan http2.ErrCode, 1), ended: make(chan struct{})}
	f.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if !read {
		return f
	}
	go func() {
		defer close(f.ended)
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			switch fr := fr.(type) {
			case *http2.GoAwayFrame:
				select {
				case f.goAway <- fr.ErrCode:
				default:
				}
			case *http2.RSTStreamFrame:
				f.resets.Add(1)
			}
		}
	}()
	return f
}

// run calls send until it fails, the server says GOAWAY or max times,
// and returns how many times it ran.
func (f *flood) run(max int, send func(i int) error) int {
	for i := range max {
		select {
		case <-f.goAway:
			f.goAway <- http2.ErrCodeEnhanceYourCalm // put back for expectCalm
			return i
		case <-f.ended:
			return i
		default:
		}
		if err := send(i); err != nil {
			return i
		}
	}
	return max
}

// expectCalm waits for the server's GOAWAY with ENHANCE_YOUR_CALM.
func (f *flood) expectCalm(t *testing.T) {
	t.Helper()
	select {
	case code := <-f.goAway:
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
		}
	case <-f.ended:
		select {
		case code := <-f.goAway:
			if code != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
			}
		default:
			t.Fatal("the server closed the connection without GOAWAY")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server let the flood go on")
	}
}

// startFloodServer serves the test service with opts and returns its
// address and a client on a connection of its own.
func startFloodServer(t *testing.T, opts transport.Options) (string, testpb.TestServiceClient) {
	t.Helper()
	addr := startRaw(t, opts)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return addr, testpb.NewTestServiceClient(cc)
}

// whileFlooding calls the server every few milliseconds from a
// well-behaved client until stop is closed, failing the test if a call
// takes longer than a second or fails; it returns how many calls ran.
func whileFlooding(t *testing.T, tc testpb.TestServiceClient, stop <-chan struct{}) <-chan int {
	done := make(chan int, 1)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			_, err := tc.EmptyCall(ctx, &testpb.Empty{})
			cancel()
			if err != nil {
				t.Errorf("a call during the flood failed: %v", err)
				return
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("a call during the flood took %v", d)
			}
			n++
		}
	}()
	return done
}

// maxGoroutines samples the goroutine count until stop is closed.
func maxGoroutines(stop <-chan struct{}) <-chan int {
	out := make(chan int, 1)
	go func() {
		peak := 0
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, runtime.NumGoroutine())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

const inputPath = "/grpc.testing.TestService/StreamingInputCall"

// lingerService's StreamingInputCall goes on after its call ended, until
// release is closed, as a handler slow to see its context end does.
type lingerService struct {
	testService
	release chan struct{}
}

func (s *lingerService) StreamingInputCall(stream grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	for {
		if _, err := stream.Recv(); err != nil {
			<-s.release
			return err
		}
	}
}

// TestRapidReset opens calls and resets them at once (CVE-2023-44487),
// against handlers that end quickly and handlers that linger after their
// call ended: the handlers of reset calls still count against the stream
// limit, so the goroutines stay bounded (one per call here), other
// clients are served, and the flooding connection ends with
// ENHANCE_YOUR_CALM.
func TestRapidReset(t *testing.T) {
	t.Run("quick handlers", func(t *testing.T) { testRapidReset(t, false) })
	t.Run("lingering handlers", func(t *testing.T) { testRapidReset(t, true) })
}

func testRapidReset(t *testing.T, linger bool) {
	const limit = 50
	opts := transport.Options{MaxConcurrentStreams: limit, Workers: -1}
	var addr string
	var tc testpb.TestServiceClient
	if linger {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := transport.NewServer(opts)
		svc := &lingerService{release: make(chan struct{})}
		testpb.RegisterTestServiceServer(srv, svc)
		go srv.Serve(l)
		t.Cleanup(srv.Stop)
		t.Cleanup(func() { close(svc.release) })
		addr = l.Addr().String()
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		tc = testpb.NewTestServiceClient(cc)
	} else {
		addr, tc = startFloodServer(t, opts)
	}
	tc.EmptyCall(testContext(t), &testpb.Empty{}) // connect before counting
	base := runtime.NumGoroutine()
	stop := make(chan struct{})
	calls := whileFlooding(t, tc, stop)
	peak := maxGoroutines(stop)

	f := startFlood(t, addr, true)
	block := f.headerBlock(inputPath, "application/grpc")
	n := f.run(200000, func(i int) error {
		id := uint32(2*i + 1)
		if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true}); err != nil {
			return err
		}
		return f.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	})
	f.expectCalm(t)
	close(stop)
	t.Logf("%d calls opened and reset before the server said GOAWAY; %d calls served meanwhile", n, <-calls)
	if n >= 200000 {
		t.Fatal("the server never ended the flood")
	}
	// The flooding connection's handlers (at most limit), the sampling
	// and calling goroutines, and grpc-go's own.
	if p := <-peak; p > base+limit+30 {
		t.Fatalf("%d goroutines during the flood, %d before: reset calls' handlers are not bounded by the stream limit", p, base)
	}
}

// TestContinuationFlood sends a header block that never ends, in empty
// CONTINUATION frames and in full ones (the CVE-2024-27316 class): the
// connection ends with ENHANCE_YOUR_CALM after a bounded number of
// frames and bytes.
func TestContinuationFlood(t *testing.T) {
	addr, tc := startFloodServer(t, transport.Options{})
	for _, size := range []int{0, 16384} {
		f := startFlood(t, addr, true)
		stop := make(chan struct{})
		calls := whileFlooding(t, tc, stop)
		block := f.headerBlock(unaryPath, "application/grpc")
		if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:len(block)/2]}); err != nil {
			t.Fatal(err)
		}
		frag := make([]byte, size)
		n := f.run(1000000, func(int) error { return f.fr.WriteContinuation(1, false, frag) })
		f.expectCalm(t)
		close(stop)
		t.Logf("%d CONTINUATION frames of %d bytes sent before GOAWAY; %d calls served meanwhile", n, size, <-calls)
		if n >= 1000000 {
			t.Fatalf("frames of %d bytes: the server never ended the header block", size)
		}
	}
}

// TestPingAndSettingsFlood sends PING and SETTINGS frames as fast as it
// can, from a client that reads the acknowledgements and from one that
// reads nothing: either way the connection ends with ENHANCE_YOUR_CALM
// (or is closed, when nothing is read), the server's heap stays bounded,
// and other clients are served throughout.
func TestPingAndSettingsFlood(t *testing.T) {
	addr, tc := startFloodServer(t, transport.Options{})
	frames := map[string]func(f *flood, i int) error{
		"ping": func(f *flood, i int) error { return f.fr.WritePing(false, [8]byte{byte(i)}) },
		"settings": func(f *flood, i int) error {
			return f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(65535 + i%2)})
		},
	}
	for name, send := range frames {
		for _, read := range []bool{true, false} {
			heap0 := heapInUse()
			f := startFlood(t, addr, read)
			stop := make(chan struct{})
			calls := whileFlooding(t, tc, stop)
			n := f.run(1000000, func(i int) error { return send(f, i) })
			if read {
				f.expectCalm(t)
			} else if n >= 1000000 {
				t.Fatalf("%s flood, acknowledgements unread: the connection still takes frames after %d", name, n)
			}
			grown := int64(heapInUse()) - int64(heap0)
			close(stop)
			t.Logf("%s flood, read %v: %d frames before the end; heap grew %d KiB; %d calls served meanwhile", name, read, n, grown>>10, <-calls)
			if grown > 32<<20 {
				t.Fatalf("%s flood: the heap grew by %d MiB", name, grown>>20)
			}
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestZeroWindowStall opens a streaming call from a client whose window
// is zero and stays so: the call is reset once StallTimeout passes
// (its handler ends), and other connections are unaffected.
func TestZeroWindowStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	addr, tc := startFloodServer(t, transport.Options{StallTimeout: stall})
	f := startFlood(t, addr, false)
	f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	req := streamingRequest(t, 10, 1000)
	f.headers(1, f.headerBlock("/grpc.testing.TestService/StreamingOutputCall", "application/grpc"), false)
	f.data(1, message(0, req), true)
	start := time.Now()
	stop := make(chan struct{})
	calls := whileFlooding(t, tc, stop)
	r := f.await(1)
	close(stop)
	t.Logf("stream ended %+v after %v; %d calls served meanwhile", r, time.Since(start), <-calls)
	if !r.gotRST || r.rst != http2.ErrCodeCancel {
		t.Fatalf("the stalled call ended with %+v, want RST_STREAM CANCEL", r)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("reset after %v, before the stall timeout", d)
	}
}

func streamingRequest(t *testing.T, count int, size int32) []byte {
	t.Helper()
	req := &testpb.StreamingOutputCallRequest{}
	for range count {
		req.ResponseParameters = append(req.ResponseParameters, &testpb.ResponseParameters{Size: size})
	}
	return marshal(t, req)
}

// TestUnreadConnection asks for 64 MiB with every window open and then
// reads nothing: what the server queues for the connection stays
// bounded, and the connection is closed once it has taken nothing for
// StallTimeout.
func TestUnreadConnection(t *testing.T) {
	const stall = 500 * time.Millisecond
	addr, tc := startFloodServer(t, transport.Options{StallTimeout: stall})
	heap0 := heapInUse()
	f := startFlood(t, addr, false)
	f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	f.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	req := streamingRequest(t, 64, 1<<20)
	f.headers(1, f.headerBlock("/grpc.testing.TestService/StreamingOutputCall", "application/grpc"), false)
	f.data(1, message(0, req), true)

	// Sample the server's heap while the client reads nothing for four
	// stall timeouts; then read what the server sent before it gave up.
	var peak uint64
	got := make(chan int64, 1)
	startReading := time.After(4 * stall)
	timeout := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			peak = max(peak, heapInUse())
		case <-startReading:
			go func() {
				n, _ := io.Copy(io.Discard, f.conn)
				got <- n
			}()
		case <-timeout:
			t.Fatal("the server did not close a connection that took nothing")
		case n := <-got:
			grown := int64(peak) - int64(heap0)
			t.Logf("read %d KiB before the server closed; heap peak %d KiB above the start", n>>10, grown>>10)
			if n >= 64<<20 {
				t.Fatal("the server sent everything to a client that read nothing for several stall timeouts")
			}
			if grown > 24<<20 {
				t.Fatalf("the heap grew by %d MiB for a client that reads nothing", grown>>20)
			}
			responsive(t, tc)
			return
		}
	}
}

func responsive(t *testing.T, tc testpb.TestServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := tc.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatalf("the server does not answer: %v", err)
	}
}

// TestRecvBudget has clients on several connections start messages they
// never finish, on many calls each, sending whatever flow control lets
// them: with a small RecvBudget, the server lets them send only the
// budget and about twice each connection's window; once the calls are
// reset, the budget is free and a starved connection sends again.
func TestRecvBudget(t *testing.T) {
	const (
		budget     = 1 << 20
		window     = 64 << 10
		connWindow = 256 << 10
		conns      = 4
		streams    = 16
	)
	addr := startRaw(t, transport.Options{RecvBudget: budget, WindowSize: window, ConnWindowSize: connWindow, MaxRecvMsgSize: 8 << 20})
	var total atomic.Int64
	var wg sync.WaitGroup
	clients := make([]*windowedClient, conns)
	for i := range clients {
		clients[i] = newWindowedClient(t, addr)
	}
	byClient := make([]atomic.Int64, conns)
	for i, c := range clients {
		for s := range streams {
			id := uint32(2*s + 1)
			c.open(id, inputPath)
			// A message of 4 MiB announced, never finished.
			wg.Go(func() {
				n := c.send(id, append([]byte{0, 0, 0x40, 0, 0}, make([]byte, 4<<20-1)...), 300*time.Millisecond)
				total.Add(n)
				byClient[i].Add(n)
			})
		}
	}
	wg.Wait()
	sent := total.Load()
	bound := int64(budget + conns*(2*connWindow+window+65535))
	t.Logf("%d KiB sent by %d connections of %d calls each; bound %d KiB", sent>>10, conns, streams, bound>>10)
	if sent > bound {
		t.Fatalf("the server took %d KiB, more than the budget allows (%d KiB)", sent>>10, bound>>10)
	}
	if sent < budget {
		t.Fatalf("the server took %d KiB, less than its budget", sent>>10)
	}
	// Free the budget: all connections but the one that sent least reset
	// their calls; it is credited again and a new call's message goes
	// through. (A connection whose own unfinished messages hold the whole
	// budget waits for them, whatever the others do: the one that sent
	// least holds at most a quarter of what all sent.)
	starved := 0
	for i := range byClient {
		if byClient[i].Load() < byClient[starved].Load() {
			starved = i
		}
	}
	for i, c := range clients {
		if i == starved {
			continue
		}
		c.mu.Lock()
		for s := range streams {
			c.fr.WriteRSTStream(uint32(2*s+1), http2.ErrCodeCancel)
		}
		c.mu.Unlock()
	}
	c := clients[starved]
	id := uint32(2*streams + 1)
	c.open(id, unaryPath)
	msg := message(0, simpleRequest(t, 1))
	if n := c.send(id, msg, 10*time.Second); n != int64(len(msg)) {
		t.Fatalf("a starved connection sent %d of %d bytes after the budget was freed", n, len(msg))
	}
}

// windowedClient is a raw client that sends DATA as the server's windows
// allow.
type windowedClient struct {
	*rawClient
	mu      sync.Mutex
	cond    *sync.Cond
	connWin int64
	initWin int64
	winOf   map[uint32]int64 // what each stream received beyond its initial window
}

func newWindowedClient(t *testing.T, addr string) *windowedClient {
	c := &windowedClient{rawClient: dialRaw(t, addr), connWin: 65535, initWin: 65535, winOf: make(map[uint32]int64)}
	c.cond = sync.NewCond(&c.mu)
	go func() {
		for {
			f, err := c.fr.ReadFrame()
			c.mu.Lock()
			if err != nil {
				c.connWin = -1 << 40
				c.cond.Broadcast()
				c.mu.Unlock()
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					c.initWin = int64(v)
				}
				if !f.IsAck() {
					c.fr.WriteSettingsAck()
				}
			case *http2.WindowUpdateFrame:
				if f.StreamID == 0 {
					c.connWin += int64(f.Increment)
				} else {
					c.winOf[f.StreamID] += int64(f.Increment)
				}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		}
	}()
	return c
}

// open opens stream id for a call of path.
func (c *windowedClient) open(id uint32, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headers(id, c.headerBlock(path, "application/grpc"), false)
}

// send sends p on stream id as the windows allow, giving up once no
// credit came for idle; it returns how many bytes went.
func (c *windowedClient) send(id uint32, p []byte, idle time.Duration) int64 {
	var sent int64
	timer := time.AfterFunc(idle, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	last := time.Now()
	for len(p) > 0 {
		n := min(int64(len(p)), 16384, c.connWin, c.initWin+c.winOf[id])
		if n <= 0 {
			if c.connWin < -1<<30 || time.Since(last) >= idle {
				return sent
			}
			timer.Reset(idle)
			c.cond.Wait()
			continue
		}
		c.connWin -= n
		c.winOf[id] -= n
		if err := c.fr.WriteData(id, false, p[:n]); err != nil {
			return sent
		}
		p = p[n:]
		sent += n
		last = time.Now()
	}
	return sent
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
