package acl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/karmanmq/karman/engine/meta"
)

// MetaDir is where an engine keeps its metadata, and so its ACL, under
// its data directory.
const MetaDir = "meta"

// OpenDir opens the ACL of the engine data directory dataDir by itself,
// for checks before the engine opens and for tools that change users
// while the server is stopped (the engine must not have the directory
// open: it is locked). With create false a data directory without
// metadata is an empty ACL and nothing is created. Close the closer
// when done.
func OpenDir(dataDir string, create bool) (*ACL, io.Closer, error) {
	dir := filepath.Join(dataDir, MetaDir)
	a := New(Options{})
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := a.Attach(emptyStore{}); err != nil {
				return nil, nil, err
			}
			return a, io.NopCloser(nil), nil
		}
	}
	st, err := meta.Open(dir, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("acl: %w", err)
	}
	if err := a.Attach(st); err != nil {
		st.Close()
		return nil, nil, err
	}
	return a, st, nil
}

// emptyStore is the store of a data directory that has none yet.
type emptyStore struct{}

func (emptyStore) AuthRecords() (map[string][]byte, error) { return nil, nil }
func (emptyStore) PutAuthRecord(string, []byte) error {
	return fmt.Errorf("%w: no metadata directory", ErrNotReady)
}
func (emptyStore) DeleteAuthRecord(string) error {
	return fmt.Errorf("%w: no metadata directory", ErrNotReady)
}
