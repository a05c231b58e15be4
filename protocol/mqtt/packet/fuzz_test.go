package packet

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzReadPacket feeds a stream to ReadPacket. The first byte picks the
// version (0 = before CONNECT, 3, 4 or 5), the rest is the stream. What
// decodes must encode, with Size matching, and decode again to an equal
// packet; what fails must fail with an *Error or an EOF.
func FuzzReadPacket(f *testing.F) {
	for _, tc := range roundTripCases() {
		versions := tc.versions
		if tc.p.Type() == CONNECT {
			versions = []byte{0}
		}
		for _, v := range versions {
			ev := v
			if v == 0 {
				ev = tc.p.(*Connect).Version
			}
			b, err := tc.p.AppendTo([]byte{v}, ev)
			if err == nil && len(b) < 4096 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		version := []byte{0, Version31, Version311, Version5}[data[0]&3]
		r := bufio.NewReader(bytes.NewReader(data[1:]))
		for i := 0; i < 8; i++ {
			p, err := ReadPacket(r, version, 1<<20)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("error of unexpected kind: %#v", err)
				}
				return
			}
			v := version
			if c, ok := p.(*Connect); ok {
				v = c.Version
			}
			enc, err := p.AppendTo(nil, v)
			if err != nil {
				t.Fatalf("%s decoded but does not encode: %v", p.Type(), err)
			}
			if p.Size(v) != len(enc) {
				t.Fatalf("%s: Size %d, encoded %d", p.Type(), p.Size(v), len(enc))
			}
			p2, err := ReadPacket(bufio.NewReader(bytes.NewReader(enc)), version, 0)
			if err != nil {
				t.Fatalf("%s: re-encoded %x does not decode: %v", p.Type(), enc, err)
			}
			if !equalDecoded(p, p2) {
				t.Fatalf("%s: round trip changed\n%+v\n%+v", p.Type(), p, p2)
			}
			if c, ok := p.(*Connect); ok && version == 0 {
				version = c.Version
			}
		}
	})
}

// equalDecoded compares two decoded packets, taking nil and empty byte
// slices as equal.
func equalDecoded(a, b Packet) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(p Packet) Packet {
	fixProps := func(pr *Properties) {
		if len(pr.CorrelationData) == 0 {
			pr.CorrelationData = nil
		}
		if len(pr.AuthData) == 0 {
			pr.AuthData = nil
		}
	}
	switch x := p.(type) {
	case *Connect:
		c := *x
		fixProps(&c.Properties)
		if len(c.Password) == 0 {
			c.Password = nil
		}
		if c.Will != nil {
			w := *c.Will
			fixProps(&w.Properties)
			if len(w.Payload) == 0 {
				w.Payload = nil
			}
			c.Will = &w
		}
		return &c
	case *Publish:
		c := *x
		fixProps(&c.Properties)
		if len(c.Payload) == 0 {
			c.Payload = nil
		}
		return &c
	case *Connack:
		c := *x
		fixProps(&c.Properties)
		return &c
	case *Auth:
		c := *x
		fixProps(&c.Properties)
		return &c
	}
	return p
}

// FuzzDecoderReuse reads a stream (first byte: the version, as in
// FuzzReadPacket) with a Decoder that reuses its packets and with one
// that does not: they must return equal packets and fail alike.
func FuzzDecoderReuse(f *testing.F) {
	for _, tc := range roundTripCases() {
		for _, v := range tc.versions {
			if tc.p.Type() == CONNECT {
				continue
			}
			b, err := tc.p.AppendTo([]byte{map[byte]byte{Version31: 1, Version311: 2, Version5: 3}[v]}, v)
			if err == nil && len(b) < 4096 {
				b2, _ := tc.p.AppendTo(b, v) // twice: the second overwrites the first
				f.Add(b2)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		version := []byte{0, Version31, Version311, Version5}[data[0]&3]
		plain := NewDecoder(bufio.NewReaderSize(bytes.NewReader(data[1:]), 64))
		reuse := NewDecoder(bufio.NewReaderSize(bytes.NewReader(data[1:]), 64))
		plain.Version, reuse.Version, reuse.Reuse = version, version, true
		for i := 0; i < 8; i++ {
			p, err := plain.Read()
			q, err2 := reuse.Read()
			if (err == nil) != (err2 == nil) {
				t.Fatalf("packet %d: error %v without reuse, %v with", i, err, err2)
			}
			if err != nil {
				return
			}
			if !equalDecoded(p, q) {
				t.Fatalf("packet %d: %+v without reuse, %+v with", i, p, q)
			}
		}
	})
}

// chunks reads its data in pieces of the sizes a fuzz input gives, so
// that a parking decoder's small first read and the reads after it
// split packets anywhere.
type chunks struct {
	data  []byte
	sizes []byte
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[0]%16) + 1
		c.sizes = c.sizes[1:]
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzParkingDecoder: a parking decoder that parks before every read,
// reading from a stream split at arbitrary points, decodes what a plain
// decoder does.
func FuzzParkingDecoder(f *testing.F) {
	for _, tc := range roundTripCases() {
		for _, v := range tc.versions {
			if tc.p.Type() == CONNECT {
				continue
			}
			b, err := tc.p.AppendTo([]byte{map[byte]byte{Version31: 1, Version311: 2, Version5: 3}[v]}, v)
			if err == nil && len(b) < 4096 {
				b2, _ := tc.p.AppendTo(b, v)
				f.Add(b2, []byte{0, 7, 1, 15})
			}
		}
	}
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		if len(data) == 0 {
			return
		}
		version := []byte{0, Version31, Version311, Version5}[data[0]&3]
		plain := NewDecoder(bufio.NewReaderSize(bytes.NewReader(data[1:]), 64))
		park := NewParkingDecoder(&chunks{data: data[1:], sizes: sizes}, 64)
		plain.Version, park.Version, park.Reuse = version, version, true
		for i := 0; i < 8; i++ {
			park.Park()
			p, err := plain.Read()
			q, err2 := park.Read()
			if (err == nil) != (err2 == nil) {
				t.Fatalf("packet %d: error %v plain, %v parking", i, err, err2)
			}
			if err != nil {
				return
			}
			if !equalDecoded(p, q) {
				t.Fatalf("packet %d: %+v plain, %+v parking", i, p, q)
			}
		}
	})
}
