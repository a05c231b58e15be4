package wire_test

import (
	"bytes"
	"fmt"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// A request goes out as a frame, comes back in through a Reader, and is
// answered with a response that carries the same opaque.
func Example() {
	req := wire.NewRequest(wire.GetMaxOffset, nil)
	req.Opaque = 42
	req.EncodeHeader(&wire.GetMaxOffsetRequestHeader{Topic: "TopicA", QueueID: 1, Committed: true})

	frame, err := req.AppendTo(nil, wire.JSON)
	if err != nil {
		panic(err)
	}

	r := wire.NewReader(bytes.NewReader(frame), wire.DecodeOptions{})
	in, err := r.ReadCommand()
	if err != nil {
		panic(err)
	}
	var h wire.GetMaxOffsetRequestHeader
	if err := in.DecodeHeader(&h); err != nil {
		panic(err)
	}
	resp := wire.NewResponse(in, wire.Success, "")
	resp.EncodeHeader(&wire.OffsetResponseHeader{Offset: 100})

	fmt.Println(in.RequestCode(), h.Topic, h.QueueID)
	fmt.Println(resp.IsResponse(), resp.Opaque, resp.ExtFields["offset"])
	// Output:
	// GET_MAX_OFFSET TopicA 1
	// true 42 100
}
