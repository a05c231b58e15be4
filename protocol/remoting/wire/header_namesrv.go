package wire

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105).
// Required: topic.
type GetRouteInfoRequestHeader struct {
	Topic string // topic
	// AcceptStandardJSONOnly (acceptStandardJsonOnly, Java 5) asks a Java
	// name server for standard JSON whatever the request version.
	AcceptStandardJSONOnly bool
}

// DecodeFields implements Header.
func (h *GetRouteInfoRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetRouteInfoRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.AcceptStandardJSONOnly = r.boolean(false, false, "acceptStandardJsonOnly")
	return r.err
}

// EncodeFields implements Header.
func (h *GetRouteInfoRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	if h.AcceptStandardJSONOnly {
		ext["acceptStandardJsonOnly"] = "true"
	}
}

// DeleteTopicRequestHeader is the header of DELETE_TOPIC_IN_BROKER (215)
// and DELETE_TOPIC_IN_NAMESRV (216). Required: topic.
type DeleteTopicRequestHeader struct {
	Topic       string // topic
	ClusterName string // clusterName, optional (name server only)
}

// DecodeFields implements Header.
func (h *DeleteTopicRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("DeleteTopicRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.ClusterName = r.str(false, "clusterName")
	return r.err
}

// EncodeFields implements Header.
func (h *DeleteTopicRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	putOpt(ext, "clusterName", h.ClusterName)
}

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103).
// Required: brokerName, brokerAddr, clusterName, haServerAddr, brokerId.
type RegisterBrokerRequestHeader struct {
	BrokerName   string // brokerName
	BrokerAddr   string // brokerAddr: remoting ip:port clients dial
	ClusterName  string // clusterName
	HAServerAddr string // haServerAddr
	BrokerID     int64  // brokerId: 0 = master
	// HeartbeatTimeoutMillis (heartbeatTimeoutMillis) is 0 when absent;
	// the name server then uses 120000.
	HeartbeatTimeoutMillis int64
	EnableActingMaster     bool  // enableActingMaster, optional
	Compressed             bool  // compressed: body is the deflate form
	BodyCRC32              int32 // bodyCrc32: 0 = not checked
}

// DecodeFields implements Header.
func (h *RegisterBrokerRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("RegisterBrokerRequestHeader", ext)
	h.BrokerName = r.nonEmpty("brokerName")
	h.BrokerAddr = r.nonEmpty("brokerAddr")
	h.ClusterName = r.nonEmpty("clusterName")
	h.HAServerAddr = r.str(true, "haServerAddr")
	h.BrokerID = r.i64(true, 0, "brokerId")
	h.HeartbeatTimeoutMillis = r.i64(false, 0, "heartbeatTimeoutMillis")
	h.EnableActingMaster = r.boolean(false, false, "enableActingMaster")
	h.Compressed = r.boolean(false, false, "compressed")
	h.BodyCRC32 = r.i32(false, 0, "bodyCrc32")
	return r.err
}

// EncodeFields implements Header.
func (h *RegisterBrokerRequestHeader) EncodeFields(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	ext["haServerAddr"] = h.HAServerAddr
	putI64(ext, "brokerId", h.BrokerID)
	if h.HeartbeatTimeoutMillis != 0 {
		putI64(ext, "heartbeatTimeoutMillis", h.HeartbeatTimeoutMillis)
	}
	putBool(ext, "enableActingMaster", h.EnableActingMaster)
	putBool(ext, "compressed", h.Compressed)
	putI32(ext, "bodyCrc32", h.BodyCRC32)
}

// RegisterBrokerResponseHeader is the response header of REGISTER_BROKER.
// Both fields are optional.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string // haServerAddr
	MasterAddr   string // masterAddr
}

// DecodeFields implements Header.
func (h *RegisterBrokerResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("RegisterBrokerResponseHeader", ext)
	h.HAServerAddr = r.str(false, "haServerAddr")
	h.MasterAddr = r.str(false, "masterAddr")
	return r.err
}

// EncodeFields implements Header.
func (h *RegisterBrokerResponseHeader) EncodeFields(ext map[string]string) {
	putOpt(ext, "haServerAddr", h.HAServerAddr)
	putOpt(ext, "masterAddr", h.MasterAddr)
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104).
// Required: brokerName, brokerAddr, clusterName, brokerId.
type UnregisterBrokerRequestHeader struct {
	BrokerName  string // brokerName
	BrokerAddr  string // brokerAddr
	ClusterName string // clusterName
	BrokerID    int64  // brokerId
}

// DecodeFields implements Header.
func (h *UnregisterBrokerRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("UnregisterBrokerRequestHeader", ext)
	h.BrokerName = r.nonEmpty("brokerName")
	h.BrokerAddr = r.nonEmpty("brokerAddr")
	h.ClusterName = r.nonEmpty("clusterName")
	h.BrokerID = r.i64(true, 0, "brokerId")
	return r.err
}

// EncodeFields implements Header.
func (h *UnregisterBrokerRequestHeader) EncodeFields(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	putI64(ext, "brokerId", h.BrokerID)
}

// BrokerNameRequestHeader is the header of the name-server requests that
// name one broker group: WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327). Required: brokerName.
type BrokerNameRequestHeader struct {
	BrokerName string // brokerName
}

// DecodeFields implements Header.
func (h *BrokerNameRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("BrokerNameRequestHeader", ext)
	h.BrokerName = r.nonEmpty("brokerName")
	return r.err
}

// EncodeFields implements Header.
func (h *BrokerNameRequestHeader) EncodeFields(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
}

// WipeWritePermResponseHeader is the response header of
// WIPE_WRITE_PERM_OF_BROKER: how many topics lost their write permission.
type WipeWritePermResponseHeader struct {
	WipeTopicCount int32 // wipeTopicCount
}

// DecodeFields implements Header.
func (h *WipeWritePermResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("WipeWritePermResponseHeader", ext)
	h.WipeTopicCount = r.i32(true, 0, "wipeTopicCount")
	return r.err
}

// EncodeFields implements Header.
func (h *WipeWritePermResponseHeader) EncodeFields(ext map[string]string) {
	putI32(ext, "wipeTopicCount", h.WipeTopicCount)
}

// AddWritePermResponseHeader is the response header of
// ADD_WRITE_PERM_OF_BROKER: how many topics got their write permission
// back.
type AddWritePermResponseHeader struct {
	AddTopicCount int32 // addTopicCount
}

// DecodeFields implements Header.
func (h *AddWritePermResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("AddWritePermResponseHeader", ext)
	h.AddTopicCount = r.i32(true, 0, "addTopicCount")
	return r.err
}

// EncodeFields implements Header.
func (h *AddWritePermResponseHeader) EncodeFields(ext map[string]string) {
	putI32(ext, "addTopicCount", h.AddTopicCount)
}
