package namesrv

import "github.com/karmanmq/karman/protocol/remoting/wire"

// The typed headers of the name-server requests that package wire does
// not define. Each implements wire.Header; decoding errors are
// *wire.FieldError values.

// fields reads extFields and keeps the first error.
type fields struct {
	header string
	ext    map[string]string
	err    error
}

// required returns the value of key, which must be present; when
// nonEmpty it must not be "" either.
func (f *fields) required(key string, nonEmpty bool) string {
	v, ok := f.ext[key]
	switch {
	case f.err != nil:
	case !ok:
		f.err = &wire.FieldError{Header: f.header, Field: key, Err: wire.ErrMissingField}
	case nonEmpty && v == "":
		f.err = &wire.FieldError{Header: f.header, Field: key, Err: wire.ErrInvalidField, Reason: "must not be empty"}
	}
	return v
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100). All
// fields are required; the value may be empty.
type PutKVConfigRequestHeader struct {
	Namespace string // namespace
	Key       string // key
	Value     string // value
}

// DecodeFields implements wire.Header.
func (h *PutKVConfigRequestHeader) DecodeFields(ext map[string]string) error {
	f := fields{header: "PutKVConfigRequestHeader", ext: ext}
	h.Namespace = f.required("namespace", true)
	h.Key = f.required("key", true)
	h.Value = f.required("value", false)
	return f.err
}

// EncodeFields implements wire.Header.
func (h *PutKVConfigRequestHeader) EncodeFields(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
	ext["value"] = h.Value
}

// KVConfigRequestHeader is the header of GET_KV_CONFIG (101) and
// DELETE_KV_CONFIG (102). Both fields are required.
type KVConfigRequestHeader struct {
	Namespace string // namespace
	Key       string // key
}

// DecodeFields implements wire.Header.
func (h *KVConfigRequestHeader) DecodeFields(ext map[string]string) error {
	f := fields{header: "KVConfigRequestHeader", ext: ext}
	h.Namespace = f.required("namespace", true)
	h.Key = f.required("key", true)
	return f.err
}

// EncodeFields implements wire.Header.
func (h *KVConfigRequestHeader) EncodeFields(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
}

// GetKVConfigResponseHeader is the response header of GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string // value
}

// DecodeFields implements wire.Header.
func (h *GetKVConfigResponseHeader) DecodeFields(ext map[string]string) error {
	h.Value = ext["value"]
	return nil
}

// EncodeFields implements wire.Header.
func (h *GetKVConfigResponseHeader) EncodeFields(ext map[string]string) { ext["value"] = h.Value }

// NamespaceRequestHeader is the header of GET_KVLIST_BY_NAMESPACE (219).
// Required: namespace.
type NamespaceRequestHeader struct {
	Namespace string // namespace
}

// DecodeFields implements wire.Header.
func (h *NamespaceRequestHeader) DecodeFields(ext map[string]string) error {
	f := fields{header: "NamespaceRequestHeader", ext: ext}
	h.Namespace = f.required("namespace", true)
	return f.err
}

// EncodeFields implements wire.Header.
func (h *NamespaceRequestHeader) EncodeFields(ext map[string]string) { ext["namespace"] = h.Namespace }

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER
// (224). Required: cluster.
type GetTopicsByClusterRequestHeader struct {
	Cluster string // cluster
}

// DecodeFields implements wire.Header.
func (h *GetTopicsByClusterRequestHeader) DecodeFields(ext map[string]string) error {
	f := fields{header: "GetTopicsByClusterRequestHeader", ext: ext}
	h.Cluster = f.required("cluster", true)
	return f.err
}

// EncodeFields implements wire.Header.
func (h *GetTopicsByClusterRequestHeader) EncodeFields(ext map[string]string) {
	ext["cluster"] = h.Cluster
}

var (
	_ wire.Header = (*PutKVConfigRequestHeader)(nil)
	_ wire.Header = (*KVConfigRequestHeader)(nil)
	_ wire.Header = (*GetKVConfigResponseHeader)(nil)
	_ wire.Header = (*NamespaceRequestHeader)(nil)
	_ wire.Header = (*GetTopicsByClusterRequestHeader)(nil)
)
