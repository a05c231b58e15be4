package plugins

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
)

func TestParseSpec(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in   string
		want string // Spec.String, "" for an error
	}{
		{"a=/bin/p", "a=/bin/p"},
		{"a.b-c_1=/bin/p,k=v,x=", "a.b-c_1=/bin/p,k=v,x="},
		{"a=/p,sha256=" + sum + ",timeout=1s,on-failure=skip,from=end,z=1", "a=/p,sha256=" + sum + ",timeout=1s,on-failure=skip,from=end,z=1"},
		{"a=/p,url=http://h/x?y=1", "a=/p,url=http://h/x?y=1"},
		{"", ""},
		{"=/p", ""},
		{"a", ""},
		{"a=", ""},
		{"a b=/p", ""},
		{"../x=/p", ""},
		{"a=/p,k", ""},
		{"a=/p,=v", ""},
		{"a=/p,k=1,k=2", ""},
		{"a=/p,sha256=abc", ""},
		{"a=/p,sha256=" + strings.Repeat("zz", 32), ""},
		{"a=/p,timeout=soon", ""},
		{"a=/p,timeout=-1s", ""},
		{"a=/p,on-failure=ignore", ""},
		{"a=/p,from=middle", ""},
	} {
		sp, err := ParseSpec(tc.in)
		if tc.want == "" {
			if !errors.Is(err, ErrSpec) {
				t.Errorf("ParseSpec(%q) = %v, %v; want an error matching ErrSpec", tc.in, sp, err)
			}
			continue
		}
		if err != nil || sp.String() != tc.want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", tc.in, sp.String(), err, tc.want)
		}
	}
}

func TestInterceptor(t *testing.T) {
	p := load(t, "guard="+program("testplugin"), Options{})
	if len(p.Hooks()) != 2 || len(p.Connectors()) != 0 {
		t.Fatalf("hooks %d, connectors %d; want 2 and 0", len(p.Hooks()), len(p.Connectors()))
	}
	e := openEngine(t, t.TempDir(), p.Hooks())
	ctx := context.Background()

	// Property changes reach the stored messages.
	if _, err := e.SendBatch(ctx, []*message.Message{msg("a", "k", "1"), msg("b", "drop", "yes")}, 0); err != nil {
		t.Fatal(err)
	}
	// A rejection stores nothing and says why.
	_, err := e.SendBatch(ctx, []*message.Message{msg("c"), msg("d", "reject", "no entry")}, 0)
	if !errors.Is(err, engine.ErrRejected) || !strings.Contains(err.Error(), "no entry") {
		t.Fatalf("rejected send: %v; want ErrRejected with the reason", err)
	}
	// A failing call fails the send under the reject policy.
	_, err = e.Send(ctx, msg("e", "fail", "boom"))
	if !errors.Is(err, engine.ErrHookFailed) || !errors.Is(err, ErrCallFailed) {
		t.Fatalf("failed call: %v; want ErrHookFailed and ErrCallFailed", err)
	}

	// Delivery drops "b"; the stored "a" carries the plugin's marks.
	got := pullAll(t, e)
	if len(got) != 1 || string(got[0].Body) != "a" {
		t.Fatalf("pulled %d messages; want only a", len(got))
	}
	if got[0].Property("seen-by") != "guard" || got[0].Property("k") != "1" || got[0].Property("pid") != fmt.Sprint(p.pid()) {
		t.Fatalf("stored properties %v; want seen-by=guard, k=1, pid=%d", got[0].Properties, p.pid())
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(ctx, "T", 0, 0, 10, nil)
	if err != nil || res.NextOffset != 2 {
		t.Fatalf("pull next offset %v, %v; want 2 (past the dropped message)", res, err)
	}
	st := p.Stats()
	if st.Calls != 5 || st.Rejects != 1 || st.Failures != 1 || st.Restarts != 0 || !st.Up {
		t.Fatalf("stats %+v; want 5 calls, 1 reject, 1 failure, no restart", st)
	}
}

func TestKilledPluginRestarts(t *testing.T) {
	p := load(t, "guard="+program("testplugin"), Options{RestartMin: 20 * time.Millisecond, RestartMax: 200 * time.Millisecond})
	e := openEngine(t, t.TempDir(), p.Hooks())
	ctx := context.Background()
	if _, err := e.Send(ctx, msg("before")); err != nil {
		t.Fatal(err)
	}
	pid := p.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Until it is back, sends fail under the policy (reject): none is
	// stored without the plugin's marks.
	_, err := e.Send(ctx, msg("during"))
	if !errors.Is(err, ErrCallFailed) {
		t.Fatalf("send to a killed plugin: %v; want ErrCallFailed", err)
	}
	eventually(t, 10*time.Second, "the plugin is not back", func() bool {
		_, err := e.Send(ctx, msg("after"))
		return err == nil
	})
	if np := p.pid(); np == pid || np == 0 {
		t.Fatalf("pid after the restart %d; the killed one was %d", np, pid)
	}
	for _, m := range pullAll(t, e) {
		if m.Property("seen-by") != "guard" {
			t.Fatalf("message %q stored without the plugin: %v", m.Body, m.Properties)
		}
	}
	if st := p.Stats(); st.Restarts < 1 || st.Failures < 1 || !st.Up {
		t.Fatalf("stats %+v; want a restart and a failure", st)
	}
}

func TestHangingPlugin(t *testing.T) {
	for _, policy := range []string{"skip", "reject"} {
		t.Run(policy, func(t *testing.T) {
			p := load(t, "slow="+program("testplugin")+",timeout=200ms,on-failure="+policy,
				Options{FailuresBeforeRestart: 1, RestartMin: 20 * time.Millisecond})
			e := openEngine(t, t.TempDir(), p.Hooks())
			ctx := context.Background()
			pid := p.pid()
			start := time.Now()
			_, err := e.Send(ctx, msg("hang", "hang", "1"))
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("a hanging call took %v with a 200ms deadline", took)
			}
			switch policy {
			case "skip":
				if err != nil {
					t.Fatalf("send under skip: %v; want it stored", err)
				}
				got := pullAll(t, e)
				if len(got) != 1 || got[0].Property("seen-by") != "" {
					t.Fatalf("stored %d messages, first %v; want the one, unmarked", len(got), got)
				}
			case "reject":
				if !errors.Is(err, ErrCallFailed) || !errors.Is(err, engine.ErrHookFailed) {
					t.Fatalf("send under reject: %v; want ErrCallFailed", err)
				}
			}
			if st := p.Stats(); st.Timeouts != 1 {
				t.Fatalf("stats %+v; want one timeout", st)
			}
			// The hung process is replaced and serves again.
			eventually(t, 10*time.Second, "no new process serves", func() bool {
				if _, err := e.Send(ctx, msg("ok")); err != nil {
					return false
				}
				ms := pullAll(t, e)
				return ms[len(ms)-1].Property("seen-by") == "slow"
			})
			if p.pid() == pid {
				t.Fatal("the hung process was not replaced")
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	sum, err := fileSHA256(program("testplugin"))
	if err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir() + "/plain"
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, spec, env string
		want            error
	}{
		{"missing", "x=" + bin + "/no-such-plugin", "", ErrNotFound},
		{"directory", "x=" + bin, "", ErrNotFound},
		{"not executable", "x=" + plain, "", ErrNotFound},
		{"checksum", "x=" + program("testplugin") + ",sha256=" + strings.Repeat("00", 32), "", ErrChecksum},
		{"not a plugin", "x=" + program("testplugin"), "garbage", ErrHandshake},
		{"exits", "x=" + program("testplugin"), "exit", ErrHandshake},
		{"wrong version", "x=" + program("testplugin"), "version", ErrHandshake},
		{"refused config", "x=" + program("testplugin") + ",refuse=bad key", "", ErrStart},
		{"right checksum", "x=" + program("testplugin") + ",sha256=" + sum, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KARMAN_TESTPLUGIN", tc.env)
			sp, err := ParseSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Load(context.Background(), sp, Options{StartTimeout: 3 * time.Second})
			if p != nil {
				p.Close()
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Load: %v; want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "x:") {
				t.Fatalf("error %q does not name the plugin", err)
			}
			t.Log(err)
		})
	}
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b)), nil
}

// TestConcurrentSendsAcrossKill sends from several goroutines while the
// plugin is killed: every send either fails with ErrCallFailed or is
// stored with the plugin's marks, and after Close no goroutine of the
// host is left.
func TestConcurrentSendsAcrossKill(t *testing.T) {
	before := runtime.NumGoroutine()
	p := load(t, "guard="+program("testplugin"), Options{RestartMin: 10 * time.Millisecond, RestartMax: 50 * time.Millisecond})
	e := openEngine(t, t.TempDir(), p.Hooks())
	ctx := context.Background()
	var wg sync.WaitGroup
	var stored, failed atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_, err := e.SendBatch(ctx, []*message.Message{msg(fmt.Sprintf("%d-%d", g, i)), msg("x")}, 0)
				switch {
				case err == nil:
					stored.Add(2)
				case errors.Is(err, ErrCallFailed):
					failed.Add(1)
				default:
					t.Errorf("send: %v", err)
				}
			}
		}()
	}
	eventually(t, 10*time.Second, "no send got through", func() bool { return stored.Load() > 0 })
	if err := killPID(p.pid()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	eventually(t, 10*time.Second, "the plugin is not back", p.up)
	got := pullAll(t, e)
	if int64(len(got)) != stored.Load() {
		t.Fatalf("stored %d messages; the senders counted %d", len(got), stored.Load())
	}
	for _, m := range got {
		if m.Property("seen-by") != "guard" {
			t.Fatalf("message %q stored without the plugin", m.Body)
		}
	}
	t.Logf("%d stored, %d batches failed, stats %+v", stored.Load(), failed.Load(), p.Stats())
	p.Close()
	e.Close()
	eventually(t, 10*time.Second, "goroutines left after Close", func() bool { return runtime.NumGoroutine() <= before })
}
