package admin

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// BrokerStatus is what a broker says about itself in
// GET_BROKER_RUNTIME_INFO, the figures mqadmin clusterList shows.
type BrokerStatus struct {
	Version string `json:"version"`
	// InTPS and OutTPS are the messages stored and pulled per second over
	// the last 10 seconds.
	InTPS  float64 `json:"inTps"`
	OutTPS float64 `json:"outTps"`
	// InToday and OutToday count the messages stored and pulled since
	// midnight (broker time), as far as the broker process has seen.
	InToday  int64 `json:"inToday"`
	OutToday int64 `json:"outToday"`
	// DiskRatio is how full the file system holding the commit log is,
	// between 0 and 1.
	DiskRatio float64   `json:"diskRatio"`
	Booted    time.Time `json:"booted"`
}

// BrokerStatus asks broker b for its runtime figures.
func (c *Client) BrokerStatus(ctx context.Context, b Broker) (*BrokerStatus, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var kv wire.KVTable
	if err := decodeBody(t, wire.GetBrokerRuntimeInfo, resp.Body, &kv); err != nil {
		return nil, err
	}
	tab := kv.Table
	first := func(k string) float64 { // the 10 s figure of "10s 1min 10min"
		f, _ := strconv.ParseFloat(strings.Fields(tab[k] + " 0")[0], 64)
		return f
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(tab[k], 10, 64)
		return n
	}
	ratio, _ := strconv.ParseFloat(tab["commitLogDiskRatio"], 64)
	s := &BrokerStatus{
		Version:   tab["brokerVersionDesc"],
		InTPS:     first("putTps"),
		OutTPS:    first("getTransferredTps"),
		InToday:   num("msgPutTotalTodayNow") - num("msgPutTotalTodayMorning"),
		OutToday:  num("msgGetTotalTodayNow") - num("msgGetTotalTodayMorning"),
		DiskRatio: ratio,
	}
	if ms := num("bootTimestamp"); ms > 0 {
		s.Booted = time.UnixMilli(ms).UTC()
	}
	return s, nil
}
