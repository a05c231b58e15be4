// Command filesource is a Karman source plugin: it reads lines from a
// file, or from every regular file of a directory in name order, and
// hands them to the broker, one message per line, to send to a topic.
// It follows the files as they grow (checking every poll interval).
//
// Configuration:
//
//	path     a file or a directory (required)
//	topic    the topic to send to (required)
//	state    where to keep the position (default PATH.offsets, or
//	         PATH/.offsets for a directory): the bytes of each file the
//	         broker has acknowledged, so a restart goes on where it left
//	         off; lines the broker had not acknowledged are read again
//	poll     how often to look for new lines (default 200ms)
//
// Only complete lines (ending in '\n') are sent; the newline is not part
// of the body.
//
//	karman serve --plugin logs=/path/to/filesource,path=/var/log/app,topic=logs
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/plugins/shared"
)

type fileSource struct {
	mu      sync.Mutex
	path    string
	dir     bool
	topic   string
	state   string
	poll    time.Duration
	acked   map[string]int64 // file name → bytes acknowledged
	pending map[string]int64 // file name → bytes read, not yet acknowledged
}

func (s *fileSource) Configure(_ context.Context, _ string, cfg map[string]string) (shared.Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path, s.topic = cfg["path"], cfg["topic"]
	if s.path == "" || s.topic == "" {
		return shared.Settings{}, errors.New("filesource: path and topic are required")
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return shared.Settings{}, fmt.Errorf("filesource: %w", err)
	}
	s.dir = fi.IsDir()
	s.state = cfg["state"]
	if s.state == "" {
		s.state = s.path + ".offsets"
		if s.dir {
			s.state = filepath.Join(s.path, ".offsets")
		}
	}
	s.poll = 200 * time.Millisecond
	if p, ok := cfg["poll"]; ok {
		if s.poll, err = time.ParseDuration(p); err != nil || s.poll <= 0 {
			return shared.Settings{}, fmt.Errorf("filesource: poll %q: want a positive duration", p)
		}
	}
	s.acked = map[string]int64{}
	if b, err := os.ReadFile(s.state); err == nil {
		if err := json.Unmarshal(b, &s.acked); err != nil {
			return shared.Settings{}, fmt.Errorf("filesource: state %s: %w", s.state, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return shared.Settings{}, fmt.Errorf("filesource: %w", err)
	}
	s.pending = nil
	return shared.Settings{}, nil
}

// files returns the files to read, in order.
func (s *fileSource) files() ([]string, error) {
	if !s.dir {
		return []string{s.path}, nil
	}
	ents, err := os.ReadDir(s.path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, filepath.Join(s.path, e.Name()))
		}
	}
	slices.Sort(names)
	return names, nil
}

// Read returns the complete lines after the acknowledged position, at
// most max, waiting for new ones until ctx ends.
func (s *fileSource) Read(ctx context.Context, max int) ([]shared.Message, error) {
	for {
		msgs, err := s.readOnce(max)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(s.poll):
		}
	}
}

func (s *fileSource) readOnce(max int) ([]shared.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	s.pending = map[string]int64{}
	var msgs []shared.Message
	for _, name := range files {
		if len(msgs) >= max {
			break
		}
		off := s.acked[name]
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		r := bufio.NewReader(f)
		for len(msgs) < max {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break // EOF or a partial last line: wait for the rest
			}
			off += int64(len(line))
			msgs = append(msgs, shared.Message{Topic: s.topic, Body: line[:len(line)-1],
				Properties: map[string]string{"file": filepath.Base(name)}})
		}
		f.Close()
		if off != s.acked[name] {
			s.pending[name] = off
		}
	}
	return msgs, nil
}

// Ack makes the lines last read acknowledged and stores the position.
func (s *fileSource) Ack(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, off := range s.pending {
		s.acked[name] = off
	}
	s.pending = nil
	b, err := json.Marshal(s.acked)
	if err != nil {
		return err
	}
	tmp := s.state + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.state)
}

func main() { shared.Serve(&fileSource{}) }
