package transport_test

import (
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// h2specPkg names the h2spec this test runs, at its pinned version, for
// "go install"; .ci/run installs what it names.
const h2specPkg = "testdata/h2spec.pkg"

// h2specAllowed are the h2spec cases this transport may fail: RFC 9113
// leaves the behaviour they check to the server, or it belongs to what a
// gRPC server does not serve. Every other failure fails the test, and so
// does any case that grpc-go's server passes and this one does not.
var h2specAllowed = map[string]string{
	"generic/2/2":   "expects a body in the answer to GET /; the transport answers what is no gRPC call with a status alone",
	"generic/2/3":   "expects a body in the answer to GET /; the transport answers what is no gRPC call with a status alone",
	"http2/5.1.2/1": "expects requests for GET / to stay open; the transport answers them at once, so the stream limit is never reached",
}

// TestH2Spec runs the h2spec conformance suite against the transport and,
// side by side, against grpc-go's server carrying the same service.
func TestH2Spec(t *testing.T) {
	bin := findH2Spec(t)

	ours := startRawListener(t, func(l net.Listener) func() {
		srv := transport.NewServer(transport.Options{})
		testpb.RegisterTestServiceServer(srv, &testService{canceled: make(chan error, 64)})
		go srv.Serve(l)
		return srv.Stop
	})
	ref := startRawListener(t, func(l net.Listener) func() {
		srv := grpc.NewServer()
		testpb.RegisterTestServiceServer(srv, &testService{canceled: make(chan error, 64)})
		go srv.Serve(l)
		return srv.Stop
	})

	var oursRes, refRes map[string]h2specResult
	var wg sync.WaitGroup
	wg.Go(func() { oursRes = runH2Spec(t, bin, ours) })
	wg.Go(func() { refRes = runH2Spec(t, bin, ref) })
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("h2spec: transport passes %d of %d, grpc-go %d of %d", passed(oursRes), len(oursRes), passed(refRes), len(refRes))

	// A case that failed here once may have timed out on a busy machine:
	// it is run again alone before it counts.
	var suspects []string
	for id, r := range oursRes {
		if !r.failed {
			continue
		}
		if ref, ok := refRes[id]; ok && !ref.failed || h2specAllowed[id] == "" {
			suspects = append(suspects, id)
		}
	}
	slices.Sort(suspects)
	var worse, unexpected []string
	for _, id := range suspects {
		again := runH2Spec(t, bin, ours, oursRes[id].spec)
		if r, ok := again[id]; ok && !r.failed {
			continue
		}
		msg := fmt.Sprintf("%s %s\n\t%s", id, oursRes[id].desc, strings.ReplaceAll(strings.TrimSpace(oursRes[id].why), "\n", "\n\t"))
		if ref, ok := refRes[id]; ok && !ref.failed {
			worse = append(worse, msg)
		} else {
			unexpected = append(unexpected, msg)
		}
	}
	if len(worse) > 0 {
		t.Errorf("%d h2spec cases pass on grpc-go's server and fail on the transport:\n%s", len(worse), strings.Join(worse, "\n"))
	}
	if len(unexpected) > 0 {
		t.Errorf("%d h2spec cases fail on the transport that RFC 9113 requires (neither grpc-go's passing them nor an allowance in h2specAllowed):\n%s", len(unexpected), strings.Join(unexpected, "\n"))
	}
	for id := range h2specAllowed {
		if r, ok := oursRes[id]; ok && !r.failed {
			t.Errorf("h2spec case %s passes now: take it out of h2specAllowed", id)
		}
	}
}

// findH2Spec returns the path of h2spec: on PATH, or where go install
// puts it (GOBIN, or GOPATH/bin).
func findH2Spec(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("h2spec"); err == nil {
		return p
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(string(out), "\n")
		if len(lines) >= 2 {
			if lines[0] != "" {
				dirs = append(dirs, lines[0])
			}
			for _, p := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, "h2spec")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	pkg, err := os.ReadFile(h2specPkg)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("h2spec is neither on PATH nor in GOPATH/bin; install it with\n\tgo install %s", strings.TrimSpace(string(pkg)))
	return ""
}

// startRawListener listens on a loopback port, starts a server on it
// with start (which returns how to stop it) and returns the port.
func startRawListener(t *testing.T, start func(net.Listener) func()) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(start(l))
	return l.Addr().(*net.TCPAddr).Port
}

// h2specResult is how one h2spec case went.
type h2specResult struct {
	spec   string // the case's id on h2spec's command line: "http2/6.5/1"
	desc   string
	failed bool
	why    string
}

func passed(rs map[string]h2specResult) (n int) {
	for _, r := range rs {
		if !r.failed {
			n++
		}
	}
	return n
}

// runH2Spec runs h2spec (the given specs, or all) against a plaintext
// server on port and returns each case's result by its id.
func runH2Spec(t *testing.T, bin string, port int, specs ...string) map[string]h2specResult {
	report := filepath.Join(t.TempDir(), "h2spec.xml")
	args := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-o", "3", "-j", report}, specs...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		// h2spec exits 1 when a case fails, and writes its report anyway.
		t.Errorf("h2spec on port %d wrote no report (%v; %v):\n%s", port, rerr, err, out)
		return nil
	}
	res, perr := parseJUnit(b)
	if perr != nil {
		t.Errorf("h2spec on port %d: %v", port, perr)
	}
	return res
}

// junit is the part of h2spec's JUnit report the test reads.
type junit struct {
	Suites []struct {
		Package string `xml:"package,attr"`
		Cases   []struct {
			Desc    string     `xml:"classname,attr"`
			Failure *junitText `xml:"failure"`
			Error   *junitText `xml:"error"`
			Skipped *struct{}  `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitText struct {
	Text string `xml:",innerxml"`
}

// parseJUnit reads h2spec's report. A case's id is its section and its
// number in the section, as h2spec names it: "http2/6.5/1". Skipped
// cases are left out.
func parseJUnit(b []byte) (map[string]h2specResult, error) {
	var r junit
	if err := xml.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parsing the JUnit report: %w", err)
	}
	res := make(map[string]h2specResult)
	for _, s := range r.Suites {
		for i, c := range s.Cases {
			if c.Skipped != nil {
				continue
			}
			id := fmt.Sprintf("%s/%d", s.Package, i+1)
			hr := h2specResult{spec: id, desc: c.Desc, failed: c.Failure != nil || c.Error != nil}
			switch {
			case c.Error != nil:
				hr.why = c.Error.Text
			case c.Failure != nil:
				hr.why = c.Failure.Text
			}
			res[id] = hr
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("the JUnit report lists no case")
	}
	return res, nil
}
