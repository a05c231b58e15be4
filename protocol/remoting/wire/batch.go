package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// batchEntryFixed is the size of a batch entry without body and
// properties: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY length (4 bytes
// each) and the PROPERTIES length (2 bytes).
const batchEntryFixed = 4*5 + 2

// MaxBatchPropertiesLength is the largest properties string a batch entry
// can carry: Java reads the 2-byte length as a signed short.
const MaxBatchPropertiesLength = math.MaxInt16

// BatchEntry is one message inside a SEND_BATCH_MESSAGE body.
//
//	+-----------+-------+-------+------+-------+------+--------+-------+
//	| TOTALSIZE | MAGIC | CRC   | FLAG | L     | BODY | P      | PROPS |
//	| i32       | i32   | i32   | i32  | i32   | L    | u16    | P     |
//	+-----------+-------+-------+------+-------+------+--------+-------+
//
// TOTALSIZE counts the whole entry including itself; clients write 0 for
// MAGIC and CRC, which the decoder ignores.
type BatchEntry struct {
	Flag int32
	// Body is never compressed inside a batch. A decoded Body aliases the
	// batch body.
	Body []byte
	// Properties is the properties string (key 0x01 value 0x02 ...).
	Properties string
}

// DecodeBatch splits a SEND_BATCH_MESSAGE body into its entries. Every
// entry's TOTALSIZE must match its contents. An empty body yields no
// entries. Errors match ErrMalformed.
func DecodeBatch(body []byte) ([]BatchEntry, error) {
	const part = "batch body"
	var out []BatchEntry
	for off := 0; off < len(body); {
		rest := body[off:]
		if len(rest) < batchEntryFixed {
			return nil, malformed(part, off, "entry %d: %d bytes left, less than the %d-byte minimum", len(out), len(rest), batchEntryFixed)
		}
		total := int64(int32(binary.BigEndian.Uint32(rest)))
		if total < batchEntryFixed || total > int64(len(rest)) {
			return nil, malformed(part, off, "entry %d: TOTALSIZE %d with %d bytes left", len(out), total, len(rest))
		}
		e := rest[:total]
		flag := int32(binary.BigEndian.Uint32(e[12:]))
		blen := int64(int32(binary.BigEndian.Uint32(e[16:])))
		if blen < 0 || blen > total-batchEntryFixed {
			return nil, malformed(part, off+16, "entry %d: body length %d does not fit TOTALSIZE %d", len(out), blen, total)
		}
		p := 20 + int(blen)
		plen := int(binary.BigEndian.Uint16(e[p:]))
		if int64(p+2+plen) != total {
			return nil, malformed(part, off+p, "entry %d: properties length %d leaves TOTALSIZE %d unmatched (entry ends at %d)", len(out), plen, total, p+2+plen)
		}
		entry := BatchEntry{Flag: flag, Properties: string(e[p+2 : p+2+plen])}
		if blen > 0 {
			entry.Body = e[20:p:p]
		}
		out = append(out, entry)
		off += int(total)
	}
	return out, nil
}

// AppendBatch appends entries in the SEND_BATCH_MESSAGE body format. It
// fails with ErrOutOfRange for properties longer than
// MaxBatchPropertiesLength or an entry longer than math.MaxInt32.
func AppendBatch(dst []byte, entries []BatchEntry) ([]byte, error) {
	start := len(dst)
	for i, e := range entries {
		if len(e.Properties) > MaxBatchPropertiesLength {
			return dst[:start], fmt.Errorf("%w: batch entry %d: properties of %d bytes exceed %d", ErrOutOfRange, i, len(e.Properties), MaxBatchPropertiesLength)
		}
		total := batchEntryFixed + len(e.Body) + len(e.Properties)
		if total > math.MaxInt32 {
			return dst[:start], fmt.Errorf("%w: batch entry %d is %d bytes", ErrOutOfRange, i, total)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(total))
		dst = binary.BigEndian.AppendUint32(dst, 0) // MAGICCODE
		dst = binary.BigEndian.AppendUint32(dst, 0) // BODYCRC
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Flag))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.Body)))
		dst = append(dst, e.Body...)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.Properties)))
		dst = append(dst, e.Properties...)
	}
	return dst, nil
}
