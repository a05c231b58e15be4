package namesrv

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Topic filter types (Java TopicFilterType).
const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// TopicConfig is one topic of a broker, as REGISTER_BROKER carries it.
// Its JSON form is Java's TopicConfig.
type TopicConfig struct {
	TopicName      string `json:"topicName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"` // wire.PermRead | wire.PermWrite | wire.PermInherit
	// TopicFilterType is FilterSingleTag (the default when empty) or
	// FilterMultiTag.
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

// MarshalJSON writes the filter type SINGLE_TAG when empty and attributes
// as {} when nil, as Java does.
func (t TopicConfig) MarshalJSON() ([]byte, error) {
	type plain TopicConfig
	p := plain(t)
	if p.TopicFilterType == "" {
		p.TopicFilterType = FilterSingleTag
	}
	if p.Attributes == nil {
		p.Attributes = map[string]string{}
	}
	return json.Marshal(p)
}

// DataVersion numbers a broker's topic configuration (Java DataVersion).
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // unix milliseconds
	Counter      int64 `json:"counter"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER (Java
// RegisterBrokerBody): the broker's topics and data version. Its JSON form
// is
//
//	{"topicConfigSerializeWrapper":{
//	    "topicConfigTable":{"TopicA":{TopicConfig JSON},...},
//	    "dataVersion":{"stateVersion":0,"timestamp":1700000000000,"counter":1}},
//	 "filterServerList":[]}
//
// and its compressed form (header compressed=true) a zlib stream of
// big-endian int32-length-prefixed parts:
//
//	+-----+-------------+-------+-----+-------+-----+-------------+-------+-----------+
//	| len | DataVersion | count | len | topic | ... | len | filter | count | mapping...|
//	| i32 | JSON        | i32   | i32 | text  |     | i32 | JSON   | i32   | len+JSON  |
//	+-----+-------------+-------+-----+-------+-----+-------------+-------+-----------+
//	topic = "name readQueueNums writeQueueNums perm filterType [attributesJSON]"
//
// The compressed topic text has no topicSysFlag or order: Java drops them
// there too. Static-topic mappings (the last part) are skipped.
type RegisterBrokerBody struct {
	Topics           []TopicConfig // sorted by name after decoding
	DataVersion      DataVersion
	FilterServerList []string
}

type topicConfigWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

type registerBrokerJSON struct {
	TopicConfigSerializeWrapper topicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
}

// maxInflated bounds the decompressed size of a compressed body.
const maxInflated = 256 << 20

// Encode returns the body in JSON or, when compressed, the deflate form.
func (b *RegisterBrokerBody) Encode(compressed bool) ([]byte, error) {
	if !compressed {
		j := registerBrokerJSON{
			TopicConfigSerializeWrapper: topicConfigWrapper{
				TopicConfigTable: make(map[string]TopicConfig, len(b.Topics)),
				DataVersion:      b.DataVersion,
			},
			FilterServerList: b.FilterServerList,
		}
		if j.FilterServerList == nil {
			j.FilterServerList = []string{}
		}
		for _, t := range b.Topics {
			j.TopicConfigSerializeWrapper.TopicConfigTable[t.TopicName] = t
		}
		return wire.EncodeJSONBody(j)
	}

	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	w := bufio.NewWriter(zw)
	part := func(p []byte) {
		binary.Write(w, binary.BigEndian, int32(len(p)))
		w.Write(p)
	}
	dv, err := json.Marshal(b.DataVersion)
	if err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	part(dv)
	binary.Write(w, binary.BigEndian, int32(len(b.Topics)))
	for _, t := range b.Topics {
		line, err := t.compactText()
		if err != nil {
			return nil, err
		}
		part(line)
	}
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fj, err := json.Marshal(filters)
	if err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	part(fj)
	binary.Write(w, binary.BigEndian, int32(0)) // no static-topic mappings
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	return buf.Bytes(), nil
}

// compactText is Java TopicConfig.encode: space-separated fields.
func (t *TopicConfig) compactText() ([]byte, error) {
	if t.TopicName == "" || strings.ContainsAny(t.TopicName, " ") {
		return nil, fmt.Errorf("namesrv: encode register body: topic name %q cannot be sent compressed", t.TopicName)
	}
	ft := t.TopicFilterType
	if ft == "" {
		ft = FilterSingleTag
	}
	attrs := t.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	aj, err := json.Marshal(attrs)
	if err != nil {
		return nil, fmt.Errorf("namesrv: encode register body: %w", err)
	}
	b := []byte(t.TopicName)
	for _, n := range []int32{t.ReadQueueNums, t.WriteQueueNums, t.Perm} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, ' ')
	b = append(b, ft...)
	b = append(b, ' ')
	return append(b, aj...), nil
}

// DecodeRegisterBrokerBody decodes a REGISTER_BROKER body. An empty body
// yields an empty registration, as in Java. Errors match wire.ErrMalformed.
func DecodeRegisterBrokerBody(body []byte, compressed bool) (*RegisterBrokerBody, error) {
	if len(body) == 0 {
		return &RegisterBrokerBody{}, nil
	}
	if compressed {
		return decodeCompressed(body)
	}
	var j registerBrokerJSON
	if err := wire.DecodeJSONBody(body, &j); err != nil {
		return nil, err
	}
	b := &RegisterBrokerBody{
		DataVersion:      j.TopicConfigSerializeWrapper.DataVersion,
		FilterServerList: j.FilterServerList,
	}
	// Keys and topicName agree in practice; when they do not, the entry
	// whose key is its name wins, else the first key in order.
	table := j.TopicConfigSerializeWrapper.TopicConfigTable
	seen := make(map[string]int, len(table))
	for _, key := range slices.Sorted(maps.Keys(table)) {
		t := table[key]
		if t.TopicName == "" {
			t.TopicName = key
		}
		if i, dup := seen[t.TopicName]; dup {
			if key == t.TopicName {
				b.Topics[i] = t
			}
			continue
		}
		seen[t.TopicName] = len(b.Topics)
		b.Topics = append(b.Topics, t)
	}
	sortTopics(b.Topics)
	return b, nil
}

func sortTopics(ts []TopicConfig) {
	slices.SortFunc(ts, func(a, b TopicConfig) int { return strings.Compare(a.TopicName, b.TopicName) })
}

func malformed(format string, args ...any) error {
	return &wire.DecodeError{Kind: wire.ErrMalformed, Part: "compressed RegisterBrokerBody", Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// inflater reads length-prefixed parts from a zlib stream within a budget
// of decompressed bytes, so a small body cannot claim a huge allocation.
type inflater struct {
	r      io.Reader
	budget int
}

func (f *inflater) int32() (int32, error) {
	var b [4]byte
	if _, err := io.ReadFull(f.r, b[:]); err != nil {
		return 0, err
	}
	f.budget -= 4
	return int32(binary.BigEndian.Uint32(b[:])), nil
}

func (f *inflater) part(what string) ([]byte, error) {
	n, err := f.int32()
	if err != nil {
		return nil, malformed("%s length: %v", what, err)
	}
	if n < 0 || int(n) > f.budget {
		return nil, malformed("%s length %d out of range", what, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(f.r, b); err != nil {
		return nil, malformed("%s: %v", what, err)
	}
	f.budget -= int(n)
	return b, nil
}

func decodeCompressed(body []byte) (*RegisterBrokerBody, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, malformed("zlib: %v", err)
	}
	defer zr.Close()
	f := &inflater{r: io.LimitReader(zr, maxInflated), budget: maxInflated}

	b := &RegisterBrokerBody{}
	dv, err := f.part("data version")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(dv, &b.DataVersion); err != nil {
		return nil, malformed("data version: %v", err)
	}
	count, err := f.int32()
	if err != nil {
		return nil, malformed("topic count: %v", err)
	}
	if count < 0 || int(count) > f.budget/4 {
		return nil, malformed("topic count %d out of range", count)
	}
	seen := make(map[string]int, min(count, 1024))
	for i := range int(count) {
		text, err := f.part("topic config")
		if err != nil {
			return nil, err
		}
		t, err := parseTopicText(text)
		if err != nil {
			return nil, malformed("topic config %d: %v", i, err)
		}
		if j, dup := seen[t.TopicName]; dup {
			b.Topics[j] = t
			continue
		}
		seen[t.TopicName] = len(b.Topics)
		b.Topics = append(b.Topics, t)
	}
	filters, err := f.part("filter server list")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(filters, &b.FilterServerList); err != nil {
		return nil, malformed("filter server list: %v", err)
	}
	// Static-topic mappings: older brokers end the stream before them.
	if n, err := f.int32(); err == nil {
		if n < 0 || int(n) > f.budget/4 {
			return nil, malformed("mapping count %d out of range", n)
		}
		for range int(n) {
			if _, err := f.part("topic queue mapping"); err != nil {
				return nil, err
			}
		}
	} else if !errors.Is(err, io.EOF) {
		return nil, malformed("mapping count: %v", err)
	}
	sortTopics(b.Topics)
	return b, nil
}

// parseTopicText parses Java's TopicConfig.encode form; a JSON object is
// accepted too.
func parseTopicText(text []byte) (TopicConfig, error) {
	var t TopicConfig
	if len(text) > 0 && text[0] == '{' {
		if err := json.Unmarshal(text, &t); err != nil {
			return t, err
		}
		if t.TopicName == "" {
			return t, errors.New("no topicName")
		}
		return t, nil
	}
	fields := strings.SplitN(string(text), " ", 6)
	if len(fields) < 5 || fields[0] == "" {
		return t, fmt.Errorf("want \"name read write perm filterType [attributes]\", got %q", text)
	}
	t.TopicName = fields[0]
	for i, dst := range []*int32{&t.ReadQueueNums, &t.WriteQueueNums, &t.Perm} {
		n, err := strconv.ParseInt(fields[i+1], 10, 32)
		if err != nil {
			return t, fmt.Errorf("field %d %q: want int32", i+2, fields[i+1])
		}
		*dst = int32(n)
	}
	t.TopicFilterType = fields[4]
	if len(fields) == 6 && fields[5] != "" {
		// Java ignores attributes it cannot parse; so do we.
		if json.Unmarshal([]byte(fields[5]), &t.Attributes) != nil {
			t.Attributes = nil
		}
	}
	return t, nil
}

// BodyCRC32 is the checksum REGISTER_BROKER carries in bodyCrc32: the
// IEEE CRC-32 of the body with the top bit cleared (Java UtilAll.crc32).
func BodyCRC32(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// ClusterInfo is the body of a GET_BROKER_CLUSTER_INFO response (Java
// ClusterInfo):
//
//	{"brokerAddrTable":{"broker-a":{BrokerData JSON}},
//	 "clusterAddrTable":{"DefaultCluster":["broker-a"]}}
type ClusterInfo struct {
	BrokerAddrTable  map[string]wire.BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string        `json:"clusterAddrTable"`
}

// MarshalJSON writes empty tables as {}.
func (c ClusterInfo) MarshalJSON() ([]byte, error) {
	type plain ClusterInfo
	p := plain(c)
	if p.BrokerAddrTable == nil {
		p.BrokerAddrTable = map[string]wire.BrokerData{}
	}
	if p.ClusterAddrTable == nil {
		p.ClusterAddrTable = map[string][]string{}
	}
	return json.Marshal(p)
}
