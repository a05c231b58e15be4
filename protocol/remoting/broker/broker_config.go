package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getBrokerConfig serves GET_BROKER_CONFIG (26) as Java brokers do: the
// configuration as a properties text ("key=value" lines) under Java's
// names, for mqadmin getBrokerConfig and the dashboard, and the data
// version in the version header field.
func (b *Broker) getBrokerConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	version, err := json.Marshal(nowVersion())
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.ExtFields = map[string]string{"version": string(version)}
	resp.Body = []byte(propertiesText(b.configProperties()))
	return resp
}

// configProperties maps the broker's and the engine's options onto the
// names of Java's BrokerConfig and MessageStoreConfig.
func (b *Broker) configProperties() map[string]string {
	o := b.eng.Options()
	flush := "ASYNC_FLUSH"
	if o.Flush == engine.FlushSync {
		flush = "SYNC_FLUSH"
	}
	p := map[string]string{
		"brokerName":                  b.opts.BrokerName,
		"brokerClusterName":           b.opts.ClusterName,
		"brokerId":                    "0",
		"brokerRole":                  "ASYNC_MASTER",
		"region":                      b.opts.Region,
		"autoCreateTopicEnable":       strconv.FormatBool(b.opts.AutoCreateTopics),
		"autoCreateSubscriptionGroup": strconv.FormatBool(b.opts.AutoCreateGroups),
		"longPollingEnable":           "true",
		"flushDiskType":               flush,
		"flushIntervalCommitLog":      strconv.FormatInt(o.FlushInterval.Milliseconds(), 10),
		"mappedFileSizeCommitLog":     strconv.FormatInt(o.SegmentSize, 10),
		"maxMessageSize":              strconv.Itoa(o.MaxMessageSize),
		"fileReservedTime":            strconv.FormatFloat(o.RetentionAge.Hours(), 'f', -1, 64),
		"diskMaxUsedSpaceRatio":       strconv.FormatFloat(o.RetentionDiskRatio*100, 'f', -1, 64),
		"storePathRootDir":            b.eng.Dir(),
		"enablePropertyFilter":        strconv.FormatBool(!o.DisableSQLFilter),
		"transactionTimeOut":          strconv.FormatInt(o.TransactionTimeout.Milliseconds(), 10),
		"transactionCheckInterval":    strconv.FormatInt(o.TransactionCheckInterval.Milliseconds(), 10),
		"transactionCheckMax":         strconv.Itoa(o.TransactionCheckMax),
		"messageDelayLevel":           delayLevels(o),
		"suspendMaxTimeMills":         strconv.FormatInt(b.opts.MaxSuspend.Milliseconds(), 10),
	}
	if host, port, err := net.SplitHostPort(b.opts.Addr); err == nil {
		p["brokerIP1"], p["listenPort"] = host, port
	}
	return p
}

// delayLevels writes the delay levels as messageDelayLevel does: "1s 5s
// 10s 30s 1m …".
func delayLevels(o engine.Options) string {
	var parts []string
	for _, d := range o.DelayLevels {
		switch {
		case d%(24*time.Hour) == 0:
			parts = append(parts, fmt.Sprintf("%dd", d/(24*time.Hour)))
		case d%time.Hour == 0:
			parts = append(parts, fmt.Sprintf("%dh", d/time.Hour))
		case d%time.Minute == 0:
			parts = append(parts, fmt.Sprintf("%dm", d/time.Minute))
		default:
			parts = append(parts, fmt.Sprintf("%gs", d.Seconds()))
		}
	}
	return strings.Join(parts, " ")
}

// propertiesText writes p as Java properties, one "key=value" line per
// entry in key order.
func propertiesText(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(p[k])
		sb.WriteByte('\n')
	}
	return sb.String()
}
