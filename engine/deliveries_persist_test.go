package engine

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
)

// historyFixture opens an engine in dir, pops the message of topic T
// twice (an invisibility change between) and acks it, and returns the
// message's history and id.
func historyFixture(t *testing.T, dir string) (*Engine, string, []Delivery) {
	t.Helper()
	e := openTest(t, dir, &Options{AutoCreateGroups: true})
	mustTopic(t, e, "T", 1)
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "grpc", ID: "c2", Addr: netip.MustParseAddrPort("10.1.2.3:4567")})
	sent, err := e.Send(ctx, newMsg("T", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	pop := func() PoppedMessage {
		t.Helper()
		ps, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 5 * time.Second})
		if err != nil || len(ps) != 1 {
			t.Fatalf("pop: %v, %d messages", err, len(ps))
		}
		return ps[0]
	}
	p := pop()
	if _, err := e.ChangeInvisible(ctx, "G", p.Handle, 0); err != nil {
		t.Fatal(err)
	}
	p = pop()
	if err := e.Ack(ctx, "G", p.Handle); err != nil {
		t.Fatal(err)
	}
	m, err := e.MessageByID(sent.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Deliveries("G", m)
	if !sameKinds(got, "pop", "invisible", "pop", "ack") {
		t.Fatalf("history: %v", kinds(got))
	}
	return e, sent.MsgID, got
}

// The delivery history is saved when the engine closes and read back
// when it opens; later records follow the restored ones.
func TestDeliveriesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e, id, before := historyFixture(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, dir, &Options{AutoCreateGroups: true})
	defer e.Close()
	m, err := e.MessageByID(id)
	if err != nil {
		t.Fatal(err)
	}
	after := e.Deliveries("G", m)
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("history after reopening:\n%+v\nwant\n%+v", after, before)
	}
	if after[0].Client != "c2" || after[0].Addr != netip.MustParseAddrPort("10.1.2.3:4567") || after[0].Attempt != 1 {
		t.Errorf("consumer of the first pop: %+v", after[0])
	}
	// A new delivery is recorded after the restored ones.
	ctx := context.Background()
	if _, err := e.Send(ctx, newMsg("T", "y")); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(ps) != 1 {
		t.Fatalf("pop: %v, %d messages", err, len(ps))
	}
	all := e.history.all("G")
	if len(all) != 5 || all[4].Kind != DeliveryPop || all[4].From != ps[0].Offset {
		t.Fatalf("records after a new pop: %+v", all)
	}
}

// A history file that does not decode (torn, overwritten, from elsewhere)
// is left out: the engine opens with an empty history, and its next save
// replaces the file.
func TestDeliveriesBadFile(t *testing.T) {
	dir := t.TempDir()
	e, _, _ := historyFixture(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, deliveryFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"truncated":   good[:len(good)/2],
		"bit flipped": func() []byte { c := append([]byte{}, good...); c[len(c)/2] ^= 1; return c }(),
		"empty":       {},
		"garbage":     []byte("not a history"),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			e := openTest(t, dir, &Options{AutoCreateGroups: true})
			if all := e.history.all("G"); len(all) != 0 {
				t.Errorf("history from a bad file: %+v", all)
			}
			e.history.add("G", Delivery{Kind: DeliveryCommit, Topic: "T", To: 1})
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			groups, err := decodeDeliveries(b)
			if err != nil || len(groups["G"]) != 1 {
				t.Fatalf("the file after a save: %v, %+v", err, groups)
			}
		})
	}
}

// decodeDeliveries gives back what encodeDeliveries encoded, and refuses
// what is past the history's bounds.
func TestDeliveriesCodec(t *testing.T) {
	groups := map[string][]Delivery{
		"G": {
			{At: 1, Kind: DeliveryPull, Topic: "T", Queue: 3, From: 10, To: 19, Protocol: "remoting", Client: "c", Addr: netip.MustParseAddrPort("[::1]:80")},
			{At: 2, Kind: DeliveryRetry, Topic: "T", Queue: 3, From: 12, To: 12, ID: "AB", Attempt: 2, Delay: 10 * time.Second},
		},
		"H": {{At: -5, Kind: DeliveryDeadLetter, Topic: "%RETRY%H", Queue: -1, From: -1, To: -1, Attempt: 16}},
	}
	got, err := decodeDeliveries(encodeDeliveries(groups))
	if err != nil || !reflect.DeepEqual(got, groups) {
		t.Fatalf("round trip: %v\n%+v", err, got)
	}
	if got, err := decodeDeliveries(encodeDeliveries(nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %+v", err, got)
	}
	tooMany := map[string][]Delivery{"G": make([]Delivery, deliveryRing+1)}
	for i := range tooMany["G"] {
		tooMany["G"][i].Kind = DeliveryAck
	}
	longString := map[string][]Delivery{"G": {{Kind: DeliveryAck, Topic: strings.Repeat("t", deliveryMaxString+1)}}}
	badKind := map[string][]Delivery{"G": {{Kind: 99}}}
	for name, g := range map[string]map[string][]Delivery{"a ring too long": tooMany, "a string too long": longString, "an unknown kind": badKind, "a group without a name": {"": {{Kind: DeliveryAck}}}} {
		if _, err := decodeDeliveries(encodeDeliveries(g)); !errors.Is(err, ErrBadDeliveries) {
			t.Errorf("%s: %v, want ErrBadDeliveries", name, err)
		}
	}
}

// FuzzDecodeDeliveries: any file decodes or is refused with
// ErrBadDeliveries, never a panic; what decodes encodes back to the same
// history.
func FuzzDecodeDeliveries(f *testing.F) {
	f.Add(encodeDeliveries(nil))
	f.Add(encodeDeliveries(map[string][]Delivery{"G": {{At: 7, Kind: DeliveryPop, Topic: "T", From: 1, To: 1, Attempt: 1, Client: "c", Addr: netip.MustParseAddrPort("1.2.3.4:5")}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		groups, err := decodeDeliveries(b)
		if err != nil {
			if !errors.Is(err, ErrBadDeliveries) {
				t.Fatalf("error %v is not ErrBadDeliveries", err)
			}
			return
		}
		again, err := decodeDeliveries(encodeDeliveries(groups))
		if err != nil || !reflect.DeepEqual(again, groups) {
			t.Fatalf("re-encoded: %v\n%+v\nwant\n%+v", err, again, groups)
		}
	})
}
