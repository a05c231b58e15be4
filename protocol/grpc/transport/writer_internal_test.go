package transport

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// An inline call's answer, queued by the reader while the writer
// goroutine held the write with nothing to write (it woke on a kick
// whose bytes the reader had already written), must still be written:
// the reader leaves it to the goroutine holding the write. Before the
// writer looked again after such an empty turn, the answer waited for
// the connection's next write, and the client for its answer.
func TestWriterTakesAnswerQueuedDuringEmptyTurn(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	c := newConn(NewServer(Options{}), server)
	answer := []byte("inline answer")
	queued := make(chan struct{})
	c.testHookEmptyTake = func() {
		c.testHookEmptyTake = nil
		// What the reader does after running an inline call: queue its
		// answer without a kick, then flush unless someone is writing.
		c.wmu.Lock()
		c.wbuf = append(c.wbuf, answer...)
		c.wmu.Unlock()
		c.flushFromReader()
		close(queued)
	}
	go c.writeLoop()
	defer func() { c.close(); server.Close(); <-c.writerDone }()
	c.kickWriter() // a stale kick: nothing is queued

	<-queued
	got := make([]byte, len(answer))
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatalf("the answer queued during the writer's empty turn was not written: %v", err)
	}
	if !bytes.Equal(got, answer) {
		t.Fatalf("wrote %q, want %q", got, answer)
	}
}
