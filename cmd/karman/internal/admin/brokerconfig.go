package admin

import (
	"context"

	"maps"
	"slices"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// BrokerConfig is one broker master's configuration, under Java's names.
type BrokerConfig struct {
	BrokerName string            `json:"brokerName"`
	Address    string            `json:"address"`
	Settings   map[string]string `json:"settings"`
}

// BrokerConfigs reads the configuration of every master (GET_BROKER_CONFIG),
// or of the one named broker.
func (c *Client) BrokerConfigs(ctx context.Context, broker string) ([]BrokerConfig, error) {
	bs, err := c.configBrokers(ctx, broker)
	if err != nil {
		return nil, err
	}
	out := make([]BrokerConfig, 0, len(bs))
	for _, b := range bs {
		resp, err := c.invoke(ctx, brokerTarget(b), request(wire.GetBrokerConfig, nil, nil))
		if err != nil {
			return nil, err
		}
		out = append(out, BrokerConfig{BrokerName: b.Name, Address: b.Addr, Settings: parseProperties(string(resp.Body))})
	}
	return out, nil
}

// ConfigChange reports a setting changed on brokers.
type ConfigChange struct {
	Key     string   `json:"key"`
	Value   string   `json:"value"`
	Brokers []string `json:"brokers"`
}

// SetBrokerConfig changes one setting on every master, or on the named
// broker, with UPDATE_BROKER_CONFIG. Karman brokers change only the
// settings that may change while they run and refuse the others; Java
// brokers take any of theirs.
func (c *Client) SetBrokerConfig(ctx context.Context, broker, key, value string) (*ConfigChange, error) {
	if key == "" || strings.ContainsAny(key, "=\n\r") || strings.ContainsAny(value, "\n\r") {
		return nil, invalidf("setting %q=%q: want a name without '=' or line breaks and a one-line value", key, value)
	}
	bs, err := c.configBrokers(ctx, broker)
	if err != nil {
		return nil, err
	}
	ch := &ConfigChange{Key: key, Value: value, Brokers: []string{}}
	for _, b := range bs {
		if _, err := c.invoke(ctx, brokerTarget(b), request(wire.UpdateBrokerConfig, nil, []byte(key+"="+value+"\n"))); err != nil {
			return nil, err
		}
		ch.Brokers = append(ch.Brokers, b.Name)
	}
	return ch, nil
}

// configBrokers returns the masters, or the one named.
func (c *Client) configBrokers(ctx context.Context, broker string) ([]Broker, error) {
	ms, err := c.masters(ctx, "")
	if err != nil || broker == "" {
		return ms, err
	}
	for _, b := range ms {
		if b.Name == broker {
			return []Broker{b}, nil
		}
	}
	names := make([]string, len(ms))
	for i, b := range ms {
		names[i] = b.Name
	}
	return nil, errorf(ErrNoBroker, "no broker master named %s (masters: %s)", broker, listOrNone(names))
}

// parseProperties reads "key=value" lines.
func parseProperties(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// SortedSettings returns the keys of a configuration in order.
func (b BrokerConfig) SortedSettings() []string { return slices.Sorted(maps.Keys(b.Settings)) }
