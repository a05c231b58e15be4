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
		"diskSpaceCleanForciblyRatio": strconv.FormatFloat(o.RetentionDiskRatio*100, 'f', -1, 64),
		"storePathRootDir":            b.eng.Dir(),
		"enablePropertyFilter":        strconv.FormatBool(!o.DisableSQLFilter),
		"transactionTimeOut":          strconv.FormatInt(o.TransactionTimeout.Milliseconds(), 10),
		"transactionCheckInterval":    strconv.FormatInt(o.TransactionCheckInterval.Milliseconds(), 10),
		"transactionCheckMax":         strconv.Itoa(o.TransactionCheckMax),
		"messageDelayLevel":           delayLevels(o),
		"suspendMaxTimeMills":         strconv.FormatInt(time.Duration(b.maxSuspend.Load()).Milliseconds(), 10),
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

// RuntimeConfig names the settings UPDATE_BROKER_CONFIG may change while
// the broker runs, under Java's names, with what each is.
var RuntimeConfig = map[string]string{
	"suspendMaxTimeMills": "longest a pull waits for messages (long polling), in ms: 1 to 29999",
}

// updateBrokerConfig serves UPDATE_BROKER_CONFIG (25): a properties body
// ("key=value" lines) of settings to change now. Only the settings of
// RuntimeConfig change at run time; a body naming any other, or a value
// out of range, changes nothing and is answered INVALID_PARAMETER saying
// which. Changes last until the broker stops (flags set them at start).
func (b *Broker) updateBrokerConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	props, err := parseProperties(string(req.Body))
	if err != nil {
		return wire.NewResponse(req, wire.InvalidParameter, err.Error())
	}
	if len(props) == 0 {
		return wire.NewResponse(req, wire.InvalidParameter, "no setting in the request body")
	}
	var suspend time.Duration
	for k, v := range props {
		switch k {
		case "suspendMaxTimeMills":
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 1 || ms >= 30000 {
				return wire.NewResponse(req, wire.InvalidParameter, fmt.Sprintf("suspendMaxTimeMills %q: want milliseconds from 1 to 29999 (below the clients' 30 s pull timeout)", v))
			}
			suspend = time.Duration(ms) * time.Millisecond
		default:
			return wire.NewResponse(req, wire.InvalidParameter, fmt.Sprintf("%s cannot be changed while the broker runs; settable now: %s", k, strings.Join(runtimeConfigNames(), ", ")))
		}
	}
	if suspend > 0 {
		b.maxSuspend.Store(int64(suspend))
	}
	b.opts.Logger.Info("broker configuration changed", "settings", propertiesText(props), "from", c.RemoteAddr())
	return success(req)
}

func runtimeConfigNames() []string {
	names := make([]string, 0, len(RuntimeConfig))
	for k := range RuntimeConfig {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// parseProperties reads "key=value" lines (Java properties without
// escapes or continuations); blank lines and lines starting with # or !
// are skipped.
func parseProperties(text string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d %q: want key=value", i+1, line)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
