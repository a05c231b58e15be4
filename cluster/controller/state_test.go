package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func cmd(t testing.TB, c command) []byte {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reg(id int64) command {
	return command{Register: &RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: id, Addr: "a:1", HAAddr: "a:2"}}
}

// Each step applies one command to the state left by the steps before
// and checks the answer and the group after it.
func TestStateSteps(t *testing.T) {
	s := newState()
	steps := []struct {
		name    string
		cmd     command
		raw     string
		err     error
		master  int64
		epoch   int32
		inSync  []int64
		setEpoh int32
	}{
		{name: "first broker becomes master", cmd: reg(1), master: 1, epoch: 1, inSync: []int64{1}, setEpoh: 1},
		{name: "second joins as replica", cmd: reg(2), master: 1, epoch: 1, inSync: []int64{1}, setEpoh: 1},
		{name: "third joins", cmd: reg(3), master: 1, epoch: 1, inSync: []int64{1}, setEpoh: 1},
		{name: "other cluster refused", cmd: command{Register: &RegisterRequest{Cluster: "D", Group: "broker-a", BrokerID: 4, Addr: "x", HAAddr: "y"}}, err: ErrMismatch, master: 1, epoch: 1, inSync: []int64{1}, setEpoh: 1},
		{name: "id 0 refused", cmd: command{Register: &RegisterRequest{Cluster: "C", Group: "broker-a", Addr: "x", HAAddr: "y"}}, err: ErrBadRequest, master: 1, epoch: 1, inSync: []int64{1}, setEpoh: 1},
		{name: "master adds replica 2", cmd: command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{2, 1, 2}}}, master: 1, epoch: 1, inSync: []int64{1, 2}, setEpoh: 2},
		{name: "a replica may not alter", cmd: command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 2, MasterEpoch: 1, SyncStateSet: []int64{2}}}, err: ErrFenced, master: 1, epoch: 1, inSync: []int64{1, 2}, setEpoh: 2},
		{name: "set without master refused", cmd: command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{2}}}, err: ErrBadRequest, master: 1, epoch: 1, inSync: []int64{1, 2}, setEpoh: 2},
		{name: "unregistered member refused", cmd: command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 9}}}, err: ErrUnknownBroker, master: 1, epoch: 1, inSync: []int64{1, 2}, setEpoh: 2},
		{name: "out-of-sync 3 is not elected, 2 is", cmd: command{Elect: &elect{Group: "broker-a", Candidates: []int64{3, 2}}}, master: 2, epoch: 2, inSync: []int64{2}, setEpoh: 3},
		{name: "old master of epoch 1 is fenced", cmd: command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}}}, err: ErrFenced, master: 2, epoch: 2, inSync: []int64{2}, setEpoh: 3},
		{name: "no in-sync candidate", cmd: command{Elect: &elect{Group: "broker-a", Candidates: []int64{3, 1}}}, err: ErrNoCandidate, master: 2, epoch: 2, inSync: []int64{2}, setEpoh: 3},
		{name: "unclean election picks 3", cmd: command{Elect: &elect{Group: "broker-a", Candidates: []int64{3, 1}, Unclean: true}}, master: 3, epoch: 3, inSync: []int64{3}, setEpoh: 4},
		{name: "unknown candidates skipped", cmd: command{Elect: &elect{Group: "broker-a", Candidates: []int64{7, 3}}}, master: 3, epoch: 4, inSync: []int64{3}, setEpoh: 5},
		{name: "unknown group", cmd: command{Elect: &elect{Group: "broker-z", Candidates: []int64{1}}}, err: ErrUnknownGroup, master: 3, epoch: 4, inSync: []int64{3}, setEpoh: 5},
		{name: "two operations refused", cmd: command{Register: reg(5).Register, Elect: &elect{Group: "broker-a"}}, err: ErrBadRequest, master: 3, epoch: 4, inSync: []int64{3}, setEpoh: 5},
		{name: "garbage refused", raw: "{not json", err: ErrBadRequest, master: 3, epoch: 4, inSync: []int64{3}, setEpoh: 5},
	}
	for _, st := range steps {
		data := []byte(st.raw)
		if st.raw == "" {
			data = cmd(t, st.cmd)
		}
		res := s.apply(data)
		if !errors.Is(res.Err, st.err) || (st.err == nil) != (res.Err == nil) {
			t.Fatalf("%s: err %v, want %v", st.name, res.Err, st.err)
		}
		g, _ := s.group("broker-a")
		if g.MasterID != st.master || g.MasterEpoch != st.epoch || !slices.Equal(g.SyncStateSet, st.inSync) || g.SyncStateSetEpoch != st.setEpoh {
			t.Fatalf("%s: master %d epoch %d in-sync %v (epoch %d), want %d %d %v (%d)", st.name,
				g.MasterID, g.MasterEpoch, g.SyncStateSet, g.SyncStateSetEpoch, st.master, st.epoch, st.inSync, st.setEpoh)
		}
	}
	if len(s.Groups["broker-a"].Members) != 3 {
		t.Fatalf("members %v, want 1..3", s.Groups["broker-a"].Members)
	}
}

// Any bytes as a raft entry are applied or refused without a panic, and a
// snapshot of the state restores to an equal one.
func FuzzApply(f *testing.F) {
	f.Add(cmd(f, reg(1)))
	f.Add(cmd(f, command{Alter: &AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}}}))
	f.Add(cmd(f, command{Elect: &elect{Group: "broker-a", Candidates: []int64{2, 1}, Unclean: true}}))
	f.Add([]byte(`{"register":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newState()
		s.apply(cmd(t, reg(1)))
		s.apply(cmd(t, reg(2)))
		s.apply(data)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeState(bytesReader(b))
		if err != nil {
			t.Fatalf("snapshot %s does not restore: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("restored %s, want %s", b2, b)
		}
	})
}

// Snapshots that do not hold together are refused.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"groups":{"broker-a":{"cluster":"C","name":"broker-a","members":{"1":{"brokerId":1}},"masterId":1}}}`))
	f.Add([]byte(`{"groups":{"x":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeState(bytesReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v is not ErrBadRequest", err)
			}
			return
		}
		for name, g := range s.Groups {
			if g == nil || g.Name != name || g.Members == nil {
				t.Fatalf("group %q restored as %+v", name, g)
			}
		}
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
