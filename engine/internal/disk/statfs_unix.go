//go:build unix

package disk

import "golang.org/x/sys/unix"

// Usage returns the used and total bytes of the file system holding dir,
// as df counts them: total leaves out the blocks reserved for root.
func Usage(dir string) (used, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := uint64(st.Bsize)
	used = (uint64(st.Blocks) - uint64(st.Bfree)) * bs
	total = used + uint64(st.Bavail)*bs
	return used, total, nil
}
