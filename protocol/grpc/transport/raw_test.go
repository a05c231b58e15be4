package transport_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"
)

// rawClient speaks HTTP/2 frame by frame, to send what real clients
// never would.
type rawClient struct {
	t    testing.TB
	conn net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := &rawClient{t: t, conn: conn, fr: http2.NewFramer(conn, conn)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// headerBlock HPACK-encodes a request's headers; extra are name/value pairs.
func (c *rawClient) headerBlock(path, contentType string, extra ...string) []byte {
	c.hbuf.Reset()
	fields := []string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "test", "content-type", contentType, "te", "trailers"}
	fields = append(fields, extra...)
	for i := 0; i < len(fields); i += 2 {
		c.henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(c.hbuf.Bytes())
}

func (c *rawClient) headers(id uint32, block []byte, end bool) {
	c.t.Helper()
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true, EndStream: end}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) data(id uint32, p []byte, end bool) {
	c.t.Helper()
	if err := c.fr.WriteData(id, end, p); err != nil {
		c.t.Fatal(err)
	}
}

// message frames a gRPC message.
func message(flag byte, p []byte) []byte {
	b := []byte{flag, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(p)))
	return append(b, p...)
}

// result is how the server ended a stream or the connection.
type result struct {
	httpStatus, grpcStatus string
	rst                    http2.ErrCode
	goAway                 http2.ErrCode
	gotRST, gotGoAway      bool
	closed                 bool
}

// await reads frames until stream id ends, the connection gets a GOAWAY,
// or it closes.
func (c *rawClient) await(id uint32) result {
	c.t.Helper()
	var r result
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
				r.closed = true
				return r
			}
			c.t.Fatalf("reading: %v", err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID != id {
				continue
			}
			for _, hf := range f.Fields {
				switch hf.Name {
				case ":status":
					r.httpStatus = hf.Value
				case "grpc-status":
					r.grpcStatus = hf.Value
				}
			}
			if f.StreamEnded() {
				return r
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				r.rst, r.gotRST = f.ErrCode, true
				return r
			}
		case *http2.GoAwayFrame:
			r.goAway, r.gotGoAway = f.ErrCode, true
			return r
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.fr.WriteSettingsAck()
			}
		}
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// startRaw serves the test service with opts on a loopback port until the
// test ends and returns its address.
func startRaw(t *testing.T, opts transport.Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := transport.NewServer(opts)
	testpb.RegisterTestServiceServer(srv, &testService{canceled: make(chan error, 16)})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

const unaryPath = "/grpc.testing.TestService/UnaryCall"

func simpleRequest(t testing.TB, size int32) []byte {
	b, err := proto.Marshal(&testpb.SimpleRequest{ResponseSize: size})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMalformedInput(t *testing.T) {
	addr := startRaw(t, transport.Options{MaxRecvMsgSize: 1 << 16})
	okMsg := message(0, simpleRequest(t, 4))
	cases := []struct {
		name  string
		send  func(c *rawClient)
		check func(r result) bool
	}{
		{"a well-formed call", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, okMsg, true)
		}, func(r result) bool { return r.httpStatus == "200" && r.grpcStatus == "0" }},
		{"unknown method", func(c *rawClient) {
			c.headers(1, c.headerBlock("/no.Such/Method", "application/grpc"), false)
			c.data(1, okMsg, true)
		}, func(r result) bool { return r.grpcStatus == "12" }},
		{"not gRPC's content type", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "text/plain"), true)
		}, func(r result) bool { return r.httpStatus == "415" }},
		{"unsupported compression", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc", "grpc-encoding", "br"), false)
		}, func(r result) bool { return r.grpcStatus == "12" }},
		{"bad timeout", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc", "grpc-timeout", "1X"), true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"compressed flag without an encoding", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, message(1, simpleRequest(t, 1)), true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"bad message flag", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, message(7, simpleRequest(t, 1)), true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"message larger than allowed", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, []byte{0, 0, 0x10, 0, 0}, false)
		}, func(r result) bool { return r.grpcStatus == "8" }},
		{"stream ends inside a message", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, okMsg[:len(okMsg)-1], true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"no message at all", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"undecodable message", func(c *rawClient) {
			c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
			c.data(1, message(0, []byte{0xff, 0xff, 0xff}), true)
		}, func(r result) bool { return r.grpcStatus == "13" }},
		{"even stream id", func(c *rawClient) {
			c.headers(2, c.headerBlock(unaryPath, "application/grpc"), true)
		}, func(r result) bool { return r.gotGoAway && r.goAway == http2.ErrCodeProtocol }},
		{"data on a stream never opened", func(c *rawClient) {
			c.data(5, okMsg, true)
		}, func(r result) bool { return r.gotGoAway && r.goAway == http2.ErrCodeProtocol }},
		{"connection window overflow", func(c *rawClient) {
			c.fr.WriteWindowUpdate(0, 1<<31-1)
		}, func(r result) bool { return r.gotGoAway && r.goAway == http2.ErrCodeFlowControl }},
		{"push promise from a client", func(c *rawClient) {
			c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: c.headerBlock(unaryPath, "application/grpc"), EndHeaders: true})
		}, func(r result) bool { return r.gotGoAway || r.closed }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			tc.send(c)
			if r := c.await(1); !tc.check(r) {
				t.Fatalf("server answered %+v", r)
			}
		})
	}
	// After all of that the server still serves.
	c := dialRaw(t, addr)
	c.headers(1, c.headerBlock(unaryPath, "application/grpc"), false)
	c.data(1, okMsg, true)
	if r := c.await(1); r.grpcStatus != "0" {
		t.Fatalf("after bad input: %+v", r)
	}
}

func TestNotHTTP2(t *testing.T) {
	addr := startRaw(t, transport.Options{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

func TestSilentClientTimesOut(t *testing.T) {
	addr := startRaw(t, transport.Options{HandshakeTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the handshake timeout", time.Since(start))
	}
}

// FuzzConn feeds arbitrary frames after the preface: the server must
// neither crash nor hang, and must stop when asked.
func FuzzConn(f *testing.F) {
	c := &rawClient{}
	c.henc = hpack.NewEncoder(&c.hbuf)
	var seed bytes.Buffer
	fr := http2.NewFramer(&seed, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.headerBlock(unaryPath, "application/grpc", "grpc-timeout", "5S"), EndHeaders: true})
	req, _ := proto.Marshal(&testpb.SimpleRequest{ResponseSize: 1000})
	fr.WriteData(1, true, message(0, req))
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: c.headerBlock("/grpc.testing.TestService/FullDuplexCall", "application/grpc"), EndHeaders: true})
	fr.WriteData(3, false, message(0, []byte{0x12, 0x02, 0x08, 0x05}))
	fr.WriteWindowUpdate(0, 1000)
	fr.WritePing(false, [8]byte{1})
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})
	cert, err := selfSignedCertificate()
	if err != nil {
		f.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// With TLS on: input that does not open with the preface but with
		// 0x16 goes through a TLS handshake instead.
		srv := transport.NewServer(transport.Options{HandshakeTimeout: time.Second, TLSConfig: tlsConfig})
		testpb.RegisterTestServiceServer(srv, &testService{canceled: make(chan error, 64)})
		go srv.Serve(l)
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, conn)
		conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if len(data) > 0 && data[0] == 0x16 {
			conn.Write(data) // a TLS record
		} else {
			conn.Write(append([]byte(http2.ClientPreface), data...))
		}
		stopped := make(chan struct{})
		go func() { srv.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("Stop hung on input " + strconv.Quote(string(data)))
		}
		conn.Close()
	})
}
