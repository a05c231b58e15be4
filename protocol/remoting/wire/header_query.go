package wire

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12): an index
// lookup by key in a time range. Required: topic, key, maxNum,
// beginTimestamp, endTimestamp.
type QueryMessageRequestHeader struct {
	Topic          string // topic
	Key            string // key: a KEYS entry, or a UNIQ_KEY with UniqueKeyQuery
	MaxNum         int32  // maxNum
	BeginTimestamp int64  // beginTimestamp, ms
	EndTimestamp   int64  // endTimestamp, ms
	// UniqueKeyQuery (_UNIQUE_KEY_QUERY) makes Key a message id lookup.
	UniqueKeyQuery bool
}

// DecodeFields implements Header.
func (h *QueryMessageRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("QueryMessageRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.Key = r.str(true, "key")
	h.MaxNum = r.i32(true, 0, "maxNum")
	h.BeginTimestamp = r.i64(true, 0, "beginTimestamp")
	h.EndTimestamp = r.i64(true, 0, "endTimestamp")
	h.UniqueKeyQuery = r.boolean(false, false, "_UNIQUE_KEY_QUERY")
	return r.err
}

// EncodeFields implements Header.
func (h *QueryMessageRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["key"] = h.Key
	putI32(ext, "maxNum", h.MaxNum)
	putI64(ext, "beginTimestamp", h.BeginTimestamp)
	putI64(ext, "endTimestamp", h.EndTimestamp)
	if h.UniqueKeyQuery {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
}

// QueryMessageResponseHeader is the header of a successful QUERY_MESSAGE
// response. Both fields are required.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 // indexLastUpdateTimestamp
	IndexLastUpdatePhyoffset int64 // indexLastUpdatePhyoffset
}

// DecodeFields implements Header.
func (h *QueryMessageResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("QueryMessageResponseHeader", ext)
	h.IndexLastUpdateTimestamp = r.i64(true, 0, "indexLastUpdateTimestamp")
	h.IndexLastUpdatePhyoffset = r.i64(true, 0, "indexLastUpdatePhyoffset")
	return r.err
}

// EncodeFields implements Header.
func (h *QueryMessageResponseHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "indexLastUpdateTimestamp", h.IndexLastUpdateTimestamp)
	putI64(ext, "indexLastUpdatePhyoffset", h.IndexLastUpdatePhyoffset)
}

// ViewMessageByIDRequestHeader is the header of VIEW_MESSAGE_BY_ID (33).
// Required: offset.
type ViewMessageByIDRequestHeader struct {
	Offset int64  // offset: commit-log offset, from an offset message id
	Topic  string // topic, optional (Java 5)
}

// DecodeFields implements Header.
func (h *ViewMessageByIDRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("ViewMessageByIDRequestHeader", ext)
	h.Offset = r.i64(true, 0, "offset")
	h.Topic = r.str(false, "topic")
	return r.err
}

// EncodeFields implements Header.
func (h *ViewMessageByIDRequestHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "offset", h.Offset)
	putOpt(ext, "topic", h.Topic)
}
