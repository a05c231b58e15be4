package wire

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Permission bits of topics and brokers (Java PermName).
const (
	PermPriority int32 = 1 << 3
	PermRead     int32 = 1 << 2
	PermWrite    int32 = 1 << 1
	PermInherit  int32 = 1 << 0
)

// MasterID is the broker id of a master in BrokerAddrs.
const MasterID int64 = 0

// TopicRouteData is the JSON body of a GET_ROUTEINFO_BY_TOPIC response.
// Encode it with Encode or EncodeJSONBody, never with an indenting
// encoder: the Go client parses brokerAddrs as text and breaks on spaces.
type TopicRouteData struct {
	// OrderTopicConf ("brokerA:4;brokerB:4") makes the topic ordered.
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// MarshalJSON writes empty lists and tables as [] and {}.
func (t TopicRouteData) MarshalJSON() ([]byte, error) {
	type plain TopicRouteData
	p := plain(t)
	p.QueueDatas = nonNil(p.QueueDatas)
	p.BrokerDatas = nonNil(p.BrokerDatas)
	if p.FilterServerTable == nil {
		p.FilterServerTable = map[string][]string{}
	}
	return json.Marshal(p)
}

// Encode returns the compact JSON body.
func (t *TopicRouteData) Encode() ([]byte, error) { return EncodeJSONBody(t) }

// DecodeTopicRouteData decodes a route body. Besides standard JSON it
// accepts the fastjson form with bare numeric keys ({0:"ip:port"}) that a
// Java name server sends to clients older than V4_9_4.
func DecodeTopicRouteData(body []byte) (*TopicRouteData, error) {
	var t TopicRouteData
	if err := json.Unmarshal(body, &t); err != nil {
		fixed, changed := quoteBareNumericKeys(body)
		if !changed || json.Unmarshal(fixed, &t) != nil {
			return nil, &DecodeError{Kind: ErrMalformed, Part: "TopicRouteData body", Offset: -1, Detail: err.Error()}
		}
	}
	return &t, nil
}

// QueueData describes the queues of a topic on one broker.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData describes one broker (a master and its slaves).
type BrokerData struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// BrokerAddrs maps broker id to "ip:port"; MasterID must be present
	// for the broker to be writable.
	BrokerAddrs        BrokerAddrs `json:"brokerAddrs"`
	ZoneName           string      `json:"zoneName,omitempty"`
	EnableActingMaster bool        `json:"enableActingMaster"`
}

// BrokerAddrs maps broker ids to addresses.
type BrokerAddrs map[int64]string

// MarshalJSON writes the map compactly with quoted decimal keys in
// ascending numeric order ({"0":"ip:port","1":"ip:port"}), and {} when
// empty, never null: the Go client splits this text on ',' and ':' itself.
func (a BrokerAddrs) MarshalJSON() ([]byte, error) {
	ids := make([]int64, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := []byte{'{'}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '"', ':')
		b = appendJSONString(b, a[id])
	}
	return append(b, '}'), nil
}

// quoteBareNumericKeys rewrites object keys that are bare integers
// ({0:"x"}) into quoted ones ({"0":"x"}), leaving strings untouched.
func quoteBareNumericKeys(in []byte) ([]byte, bool) {
	out := make([]byte, 0, len(in)+16)
	changed := false
	inString := false
	expectKey := false
	for i := 0; i < len(in); i++ {
		c := in[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(in) {
				i++
				out = append(out, in[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			expectKey = false
			out = append(out, c)
		case c == '{' || c == ',':
			expectKey = true
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		case expectKey && (c == '-' || (c >= '0' && c <= '9')):
			j := i + 1
			for j < len(in) && in[j] >= '0' && in[j] <= '9' {
				j++
			}
			k := j
			for k < len(in) && (in[k] == ' ' || in[k] == '\t' || in[k] == '\n' || in[k] == '\r') {
				k++
			}
			if k < len(in) && in[k] == ':' {
				out = append(out, '"')
				out = append(out, in[i:j]...)
				out = append(out, '"')
				changed = true
			} else {
				out = append(out, in[i:j]...)
			}
			i = j - 1
			expectKey = false
		default:
			expectKey = false
			out = append(out, c)
		}
	}
	return out, changed
}
