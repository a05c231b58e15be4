package wire

// ACL 2.0 administration, as RocketMQ 5.3 defines it (AUTH_CREATE_USER
// 3001 to AUTH_LIST_ACL 3010). Each request has one header, AuthHeader,
// of which it uses some fields:
//
//	AUTH_CREATE_USER  3001  username; body UserInfo
//	AUTH_UPDATE_USER  3002  username; body UserInfo (fields set are changed)
//	AUTH_DELETE_USER  3003  username
//	AUTH_GET_USER     3004  username; answer UserInfo
//	AUTH_LIST_USER    3005  filter (part of the name); answer []UserInfo
//	AUTH_CREATE_ACL   3006  subject ("User:NAME"); body AclInfo
//	AUTH_UPDATE_ACL   3007  subject; body AclInfo
//	AUTH_DELETE_ACL   3008  subject, policyType, resource (empty: all)
//	AUTH_GET_ACL      3009  subject; answer AclInfo
//	AUTH_LIST_ACL     3010  subjectFilter, resourceFilter; answer []AclInfo
//
// Bodies are JSON.

// AuthHeader is the header of the AUTH_* requests; empty fields are left
// out.
type AuthHeader struct {
	Username       string // username
	Filter         string // filter
	Subject        string // subject
	PolicyType     string // policyType
	Resource       string // resource
	SubjectFilter  string // subjectFilter
	ResourceFilter string // resourceFilter
}

var authHeaderFields = [...]string{"username", "filter", "subject", "policyType", "resource", "subjectFilter", "resourceFilter"}

func (h *AuthHeader) fields() [7]*string {
	return [7]*string{&h.Username, &h.Filter, &h.Subject, &h.PolicyType, &h.Resource, &h.SubjectFilter, &h.ResourceFilter}
}

// DecodeFields implements Header. No field is required here: the broker
// says which its request needs.
func (h *AuthHeader) DecodeFields(ext map[string]string) error {
	for i, f := range h.fields() {
		*f = ext[authHeaderFields[i]]
	}
	return nil
}

// EncodeFields implements Header.
func (h *AuthHeader) EncodeFields(ext map[string]string) {
	for i, f := range h.fields() {
		if *f != "" {
			ext[authHeaderFields[i]] = *f
		}
	}
}

// UserInfo is a user of the ACL in AUTH_* bodies. Password is the
// secret; brokers answering AUTH_GET_USER and AUTH_LIST_USER may leave it
// out.
type UserInfo struct {
	Username   string `json:"username"`
	Password   string `json:"password,omitempty"`
	UserType   string `json:"userType,omitempty"`   // Super or Normal
	UserStatus string `json:"userStatus,omitempty"` // enable or disable
}

// AclInfo is a subject's policies in AUTH_* bodies.
type AclInfo struct {
	Subject  string       `json:"subject"` // User:NAME
	Policies []PolicyInfo `json:"policies"`
}

// PolicyInfo is one policy of an AclInfo.
type PolicyInfo struct {
	PolicyType string            `json:"policyType,omitempty"` // Custom or Default
	Entries    []PolicyEntryInfo `json:"entries"`
}

// PolicyEntryInfo is one entry of a PolicyInfo.
type PolicyEntryInfo struct {
	Resource  string   `json:"resource"`  // Topic:NAME, Group:NAME, Cluster:NAME, *, mqtt:FILTER
	Actions   []string `json:"actions"`   // Pub, Sub, Create, Update, Delete, Get, List, All
	SourceIPs []string `json:"sourceIps"` // addresses or CIDR ranges; empty: any
	Decision  string   `json:"decision"`  // Allow or Deny
}
