package tracedata

import (
	"errors"
	"strings"
	"testing"
)

// rec joins fields into one record of the format.
func rec(fields ...string) string { return strings.Join(fields, FieldSep) + RecordSep }

func TestDecode(t *testing.T) {
	pub := rec("Pub", "1700000000000", "DefaultRegion", "PG", "orders", "ID1", "paid", "k1", "10.0.0.1:10911", "42", "3", "0", "OFF1", "true", "10.0.0.9")
	for _, tc := range []struct {
		name string
		body string
		want []Record
		err  bool
	}{
		{"pub of a 5.x client", pub, []Record{{Type: Pub, Time: 1700000000000, Region: "DefaultRegion", Group: "PG", Topic: "orders", MsgID: "ID1",
			Tags: "paid", Keys: "k1", StoreHost: "10.0.0.1:10911", BodyLength: 42, CostMillis: 3, OffsetMsgID: "OFF1", Success: true, ClientHost: "10.0.0.9"}}, false},
		{"pub of an old client", rec("Pub", "1", "R", "PG", "T", "ID1", "", "", "h", "5", "1", "0", "false"),
			[]Record{{Type: Pub, Time: 1, Region: "R", Group: "PG", Topic: "T", MsgID: "ID1", StoreHost: "h", BodyLength: 5, CostMillis: 1}}, false},
		{"sub before and after, batched", rec("SubBefore", "2", "R", "CG", "REQ", "ID1", "1", "k1") + rec("SubAfter", "REQ", "ID1", "7", "false", "k1", "1", "3"),
			[]Record{{Type: SubBefore, Time: 2, Region: "R", Group: "CG", RequestID: "REQ", MsgID: "ID1", RetryTimes: 1, Keys: "k1"},
				{Type: SubAfter, Time: 3, RequestID: "REQ", MsgID: "ID1", CostMillis: 7, Keys: "k1", ContextCode: 1}}, false},
		{"sub before and after of the Go client", rec("SubBefore", "2", "R", "CG", "REQ", "ID1", "0", "null", "10.0.0.9") + rec("SubAfter", "REQ", "ID1", "7", "true", "null", "0", "3", "CG"),
			[]Record{{Type: SubBefore, Time: 2, Region: "R", Group: "CG", RequestID: "REQ", MsgID: "ID1", ClientHost: "10.0.0.9"},
				{Type: SubAfter, Time: 3, Group: "CG", RequestID: "REQ", MsgID: "ID1", CostMillis: 7, Success: true}}, false},
		{"old sub after", rec("SubAfter", "REQ", "ID1", "7", "true", "k1"), []Record{{Type: SubAfter, RequestID: "REQ", MsgID: "ID1", CostMillis: 7, Success: true, Keys: "k1"}}, false},
		{"end transaction", rec("EndTransaction", "4", "R", "PG", "T", "ID1", "", "", "h", "1", "TX1", "COMMIT_MESSAGE", "true"),
			[]Record{{Type: EndTransaction, Time: 4, Region: "R", Group: "PG", Topic: "T", MsgID: "ID1", StoreHost: "h", MsgType: 1, TransactionID: "TX1", TransactionState: "COMMIT_MESSAGE", FromCheck: true}}, false},
		{"unknown types are skipped", rec("Recall", "x") + pub, nil, false},
		{"too few fields", rec("Pub", "1", "R"), nil, true},
		{"a bad number, then a good record", rec("SubBefore", "soon", "R", "CG", "REQ", "ID1", "1", "k1") + pub, nil, true},
		{"empty", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.body)
			if (err != nil) != tc.err || err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if tc.want == nil && strings.HasSuffix(tc.body, pub) && tc.body != pub {
				// Only the good Pub record survives.
				if len(got) != 1 || got[0].MsgID != "ID1" || got[0].Type != Pub {
					t.Fatalf("got %+v, want the Pub record alone", got)
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("record %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(rec("Pub", "1700000000000", "R", "PG", "orders", "ID1", "paid", "k1", "h", "42", "3", "0", "OFF1", "true", "c"))
	f.Add(rec("SubBefore", "2", "R", "CG", "REQ", "ID1", "1", "k1") + rec("SubAfter", "REQ", "ID1", "7", "false", "k1", "1", "3"))
	f.Add(rec("EndTransaction", "4", "R", "PG", "T", "ID1", "", "", "h", "1", "TX1", "COMMIT_MESSAGE", "true"))
	f.Fuzz(func(t *testing.T, body string) {
		got, err := Decode(body)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not match ErrMalformed", err)
		}
		for _, r := range got {
			if minFields[r.Type] == 0 {
				t.Fatalf("a record of unknown type %q returned", r.Type)
			}
		}
	})
}
