package protobench

import (
	"errors"
	"strings"
	"testing"

	"github.com/karmanmq/karman/cmd/karman/internal/chaos"
)

// Bad flags are refused before a cluster starts, each with what is wrong.
func TestChaosFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		is   error
	}{
		{[]string{"chaos"}, "give --fault or --hold", nil},
		{[]string{"chaos", "--fault", "kill-master", "--hold"}, "give --fault or --hold", nil},
		{[]string{"chaos", "--fault", "kill-everything"}, "kill-everything", chaos.ErrUnknownFault},
		{[]string{"chaos", "--fault", "kill-master,nope"}, "nope", chaos.ErrUnknownFault},
		{[]string{"chaos", "--fault", "partition-master", "--network", "loopback"}, "partition-master", chaos.ErrNoNetns},
		{[]string{"chaos", "--fault", "kill-master", "--network", "wifi"}, `--network "wifi"`, nil},
		{[]string{"chaos", "--fault", "kill-master", "--network", "loopback", "--replication", "semi"}, `--replication "semi"`, nil},
		{[]string{"chaos", "--fault", "kill-master", "--network", "loopback", "--duration", "1s"}, "--duration 1s", nil},
		{[]string{"chaos", "--fault", "kill-master", "--network", "loopback", "--karman", "/no/such/karman"}, "/no/such/karman", errNoKarman},
	} {
		_, err := runBench(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

func TestChaosPrint(t *testing.T) {
	r := &chaos.Result{Fault: "kill-master", Replication: "sync", Network: "netns", Victim: "a1",
		Verdict: chaos.Verdict{Acked: 10, Consumed: 10}, FailoverMS: 2500, RecoveryMS: -1}
	var b strings.Builder
	if err := printChaos(&b, r, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"fault":"kill-master"`, `"acked":10`, `"consumed":10`, `"lost":0`, `"duplicated":0`,
		`"order_violations":0`, `"failover_ms":2500`, `"recovery_ms":-1`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("JSON line %s lacks %s", b.String(), s)
		}
	}
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("want one line, got %q", b.String())
	}
	b.Reset()
	printChaos(&b, r, false)
	if !strings.Contains(b.String(), "failover 2.5s recovery -") {
		t.Errorf("text line: %q", b.String())
	}
}
