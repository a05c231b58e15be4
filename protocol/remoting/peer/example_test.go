package peer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Ask a broker for the next offset of a queue.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	c, err := peer.Dial(ctx, "127.0.0.1:10911", peer.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	req := wire.NewRequest(wire.GetMaxOffset, nil)
	req.EncodeHeader(&wire.GetMaxOffsetRequestHeader{Topic: "TopicA", QueueID: 0, Committed: true})
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	if resp.ResponseCode() != wire.Success {
		fmt.Println(resp.ResponseCode(), resp.Remark)
		return
	}
	var h wire.OffsetResponseHeader
	if err := resp.DecodeHeader(&h); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("max offset", h.Offset)
}
