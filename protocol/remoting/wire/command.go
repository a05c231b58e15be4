package wire

import (
	"slices"
	"strconv"
	"strings"
)

// SerializeType is the encoding of a command header, stored in the top byte
// of the header-length field.
type SerializeType byte

// Header serialize types.
const (
	JSON     SerializeType = 0
	RocketMQ SerializeType = 1
)

func (t SerializeType) String() string {
	switch t {
	case JSON:
		return "JSON"
	case RocketMQ:
		return "ROCKETMQ"
	}
	return "SerializeType(" + strconv.Itoa(int(t)) + ")"
}

// LanguageCode names the implementation language of the sender. In binary
// headers it is one byte; in JSON headers its name.
type LanguageCode byte

// Language codes, as numbered by the Java LanguageCode enum.
const (
	LanguageJava   LanguageCode = 0
	LanguageCPP    LanguageCode = 1
	LanguageDotNet LanguageCode = 2
	LanguagePython LanguageCode = 3
	LanguageDelphi LanguageCode = 4
	LanguageErlang LanguageCode = 5
	LanguageRuby   LanguageCode = 6
	LanguageOther  LanguageCode = 7
	LanguageHTTP   LanguageCode = 8
	LanguageGo     LanguageCode = 9
	LanguagePHP    LanguageCode = 10
	LanguageOMS    LanguageCode = 11
	LanguageRust   LanguageCode = 12
	LanguageNodeJS LanguageCode = 13
)

var languageNames = [...]string{
	LanguageJava:   "JAVA",
	LanguageCPP:    "CPP",
	LanguageDotNet: "DOTNET",
	LanguagePython: "PYTHON",
	LanguageDelphi: "DELPHI",
	LanguageErlang: "ERLANG",
	LanguageRuby:   "RUBY",
	LanguageOther:  "OTHER",
	LanguageHTTP:   "HTTP",
	LanguageGo:     "GO",
	LanguagePHP:    "PHP",
	LanguageOMS:    "OMS",
	LanguageRust:   "RUST",
	LanguageNodeJS: "NODE_JS",
}

// String returns the Java enum name ("GO", "JAVA", ...) or
// "LanguageCode(N)" for a value without a name.
func (l LanguageCode) String() string {
	if name, ok := l.name(); ok {
		return name
	}
	return "LanguageCode(" + strconv.Itoa(int(l)) + ")"
}

func (l LanguageCode) name() (string, bool) {
	if int(l) < len(languageNames) {
		return languageNames[l], true
	}
	return "", false
}

// ParseLanguage maps a language name (any case) to its code. Unknown names
// map to LanguageOther with ok == false.
func ParseLanguage(name string) (code LanguageCode, ok bool) {
	switch name { // the names clients send, without folding case
	case "GO":
		return LanguageGo, true
	case "JAVA":
		return LanguageJava, true
	}
	for i, n := range languageNames {
		if strings.EqualFold(n, name) {
			return LanguageCode(i), true
		}
	}
	return LanguageOther, false
}

// Flag bits.
const (
	// FlagResponse is set on responses and clear on requests.
	FlagResponse int32 = 1 << 0
	// FlagOneway is set on requests whose sender wants no response.
	FlagOneway int32 = 1 << 1
)

// DefaultVersion is the version this package puts into the commands it
// builds: the ordinal of Java's MQVersion V5_3_0. Peers only compare it
// with older versions to enable features.
const DefaultVersion int32 = 473

// Command is one remoting request or response.
type Command struct {
	// Code is a RequestCode for requests and a ResponseCode for responses.
	// See the package comment on codes wider than 16 bits.
	Code int32
	// Language is the sender's implementation language.
	Language LanguageCode
	// Version is the sender's version ordinal (Java MQVersion).
	Version int32
	// Opaque matches a response to its request.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is free text, usually an error message on responses.
	Remark string
	// ExtFields are the custom header fields. Nil and empty are the same.
	ExtFields map[string]string
	// Body is the payload after the header. A decoded Body aliases the
	// decoded frame.
	Body []byte
	// SerializeType records how the header was encoded when the command
	// was decoded. AppendTo takes the type as an argument and ignores it.
	SerializeType SerializeType
	// BodyDone, when set on a command to be sent, is called once Body
	// has been written out or copied and is not used again, so that its
	// memory can be reused. Senders (package peer) call it; AppendTo
	// does not.
	BodyDone func()

	// ext is the extFields object of a JSON header decoded with
	// DecodeOptions.DeferExtFields, until LoadExtFields decodes it.
	ext       []byte
	extStrict bool
	// pairs holds the entries of ext, gathered when the header was
	// decoded, until the first reading of them takes them.
	pairs *pairBuffer
	// frame is the buffer a Reader decoded the command from.
	frame []byte
	// hdr holds the fields SetHeader gave, until LoadExtFields puts them
	// into ExtFields; hdrExt the fields SetExt set besides them, sorted
	// by key.
	hdr    Header
	hdrExt []field
}

// IsResponse reports whether FlagResponse is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether FlagOneway is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// RequestCode returns Code as a RequestCode.
func (c *Command) RequestCode() RequestCode { return RequestCode(c.Code) }

// ResponseCode returns Code as a ResponseCode.
func (c *Command) ResponseCode() ResponseCode { return ResponseCode(c.Code) }

// NewRequest returns a request with the given code and extFields (which it
// keeps, not copies). Opaque is left zero for the sender to assign;
// Language is GO and Version is DefaultVersion.
func NewRequest(code RequestCode, ext map[string]string) *Command {
	return &Command{
		Code:      int32(code),
		Language:  LanguageGo,
		Version:   DefaultVersion,
		ExtFields: ext,
	}
}

// NewResponse returns a response to req: same opaque and serialize type,
// FlagResponse set, the given code and remark.
func NewResponse(req *Command, code ResponseCode, remark string) *Command {
	c := ResponseTo(req, code, remark)
	return &c
}

// ResponseTo is NewResponse as a value, for a response embedded in a
// larger allocation.
func ResponseTo(req *Command, code ResponseCode, remark string) Command {
	return Command{
		Code:          int32(code),
		Language:      LanguageGo,
		Version:       DefaultVersion,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
}

// SetExt sets one extFields entry, allocating the map if needed. On a
// command whose fields SetHeader gave, it keeps the entry beside them
// without building the map.
func (c *Command) SetExt(key, value string) {
	if c.hdr != nil && c.ExtFields == nil {
		i, found := slices.BinarySearchFunc(c.hdrExt, key, func(f field, k string) int { return strings.Compare(f.key, k) })
		if found {
			c.hdrExt[i].value = value
		} else {
			c.hdrExt = slices.Insert(c.hdrExt, i, field{key, value})
		}
		return
	}
	c.LoadExtFields()
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	c.ExtFields[key] = value
}

// String summarises the command for logs; it leaves out the body bytes.
func (c *Command) String() string {
	var b strings.Builder
	if c.IsResponse() {
		b.WriteString("response ")
		b.WriteString(ResponseCode(c.Code).String())
	} else {
		b.WriteString("request ")
		b.WriteString(RequestCode(c.Code).String())
	}
	b.WriteString(" opaque=")
	b.WriteString(strconv.Itoa(int(c.Opaque)))
	b.WriteString(" flag=")
	b.WriteString(strconv.Itoa(int(c.Flag)))
	if c.Remark != "" {
		b.WriteString(" remark=")
		b.WriteString(strconv.Quote(c.Remark))
	}
	b.WriteString(" ext=")
	b.WriteString(strconv.Itoa(len(c.ExtFields)))
	b.WriteString(" body=")
	b.WriteString(strconv.Itoa(len(c.Body)))
	return b.String()
}
