package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// ErrNoMosquitto means mosquitto is not on the PATH (Debian: apt-get
// install mosquitto).
var ErrNoMosquitto = errors.New("mqtt: mosquitto not found on PATH")

// Mosquitto is a mosquitto broker started for a run.
type Mosquitto struct {
	Addr    string
	Version string
	cmd     *exec.Cmd
	dir     string
	exited  chan struct{}
}

// PID returns the broker's process id.
func (m *Mosquitto) PID() int { return m.cmd.Process.Pid }

// StartMosquitto starts mosquitto on a free loopback port with anonymous
// access, no persistence and no limit on queued QoS 1 messages (so a slow
// subscriber is not counted as loss), and waits until it accepts
// connections. It inherits this process's open-file limit.
func StartMosquitto(ctx context.Context) (*Mosquitto, error) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			return nil, ErrNoMosquitto
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	dir, err := os.MkdirTemp("", "karman-bench-mosquitto-")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	text := "listener " + port + " 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n" +
		"max_connections -1\nlog_dest stderr\nlog_type error\nlog_type warning\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m := &Mosquitto{Addr: addr, dir: dir, exited: make(chan struct{})}
	if out, err := exec.Command(bin, "-h").CombinedOutput(); len(out) > 0 {
		_ = err // mosquitto -h exits 3 after printing its version
		if line, _, ok := cutLine(string(out)); ok {
			m.Version = line
		}
	}
	m.cmd = exec.Command(bin, "-c", conf)
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { m.cmd.Wait(); close(m.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return m, nil
		}
		select {
		case <-m.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("mqtt: mosquitto exited at start: %v", m.cmd.ProcessState)
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("mqtt: mosquitto does not accept connections on %s", addr)
		}
	}
}

func cutLine(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", s != ""
}

// Stop ends the broker (SIGTERM, then SIGKILL after 5 s) and removes its
// configuration.
func (m *Mosquitto) Stop() error {
	defer os.RemoveAll(m.dir)
	select {
	case <-m.exited:
		return nil
	default:
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(5 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	return nil
}

// String describes the broker for the run's header.
func (m *Mosquitto) String() string {
	return m.Version + " at " + m.Addr + ", pid " + strconv.Itoa(m.PID())
}
