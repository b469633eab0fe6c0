package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listDir lists a directory, to check that no temporary file is left.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")

	// New file: content and mode 0644.
	require.NoError(t, Write(path, writeString("first")))
	require.Equal(t, "first", readFile(t, path))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), st.Mode().Perm(), "mode of a new file")

	// An existing file's permissions are kept on replacement.
	require.NoError(t, os.Chmod(path, 0o600))
	big := strings.Repeat("0123456789", 100_000) // larger than the buffer
	require.NoError(t, Write(path, writeString(big)))
	require.Equal(t, big, readFile(t, path))
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "mode of a replaced file")

	// Failure after writing part of the data: target untouched, the error
	// is returned (wrapped in a PathError naming the file), no temporary
	// file remains.
	boom := errors.New("boom")
	err = Write(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, strings.Repeat("x", 200_000))
		return boom
	})
	require.ErrorIs(t, err, boom)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "write", pe.Op)
	require.Equal(t, path, pe.Path)
	require.Equal(t, big, readFile(t, path), "a failed write changed the target")
	require.Equal(t, []string{"out.bin"}, listDir(t, dir), "after a failed write")

	// A panic in write also removes the temporary file and propagates.
	require.PanicsWithValue(t, "write panicked", func() {
		_ = Write(path, func(w io.Writer) error {
			_, _ = io.WriteString(w, "partial")
			panic("write panicked")
		})
	})
	require.Equal(t, []string{"out.bin"}, listDir(t, dir), "after a panic in write")
	require.Equal(t, big, readFile(t, path), "a panicking write changed the target")

	// Failing file system operations are errors naming the path.
	for _, bad := range []string{
		filepath.Join(dir, "no-such-dir", "x.bin"), // directory missing
		dir,                             // a directory
		filepath.Join(dir, "sub") + "/", // no file name
	} {
		err := Write(bad, writeString(""))
		require.ErrorContains(t, err, bad)
		require.ErrorAs(t, err, &pe)
	}
	require.ErrorIs(t, Write(dir, writeString("")), syscall.EISDIR)
	require.PanicsWithValue(t, "outfile: Write of "+path+" with a nil write function", func() { _ = Write(path, nil) })

	// A relative path in the working directory works.
	t.Chdir(dir)
	require.NoError(t, Write("rel.txt", writeString("rel")))
	require.Equal(t, "rel", readFile(t, "rel.txt"))
}

// TestWriteRemovesStaleTempFilesOfItsTarget: temporary files left by an
// interrupted writer (".NAME.tmp-DIGITS", older than StaleAge) are removed
// by the next write of NAME; anything else is left alone.
func TestWriteRemovesStaleTempFilesOfItsTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.npz")
	old := time.Now().Add(-2 * StaleAge)
	mk := func(name string, age time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o600))
		require.NoError(t, os.Chtimes(p, age, age))
	}
	stale := []string{".model.npz.tmp-1", ".model.npz.tmp-4294967295", ".model.npz.tmp-0042"}
	for _, name := range stale {
		mk(name, old)
	}
	kept := []string{
		".model.npz.tmp-12345678901", // 11 digits: not our naming
		".model.npz.tmp-12a",
		".model.npz.tmp-",
		".model.npz.tmp-7x",
		".other.npz.tmp-123", // another target
		"model.npz.tmp-123",  // no leading dot
		".model.npz.tmp-99",  // young: may be a concurrent writer's
		"model.npz.bak",
	}
	for _, name := range kept {
		age := old
		if name == ".model.npz.tmp-99" {
			age = time.Now()
		}
		mk(name, age)
	}
	// A directory and a symbolic link with our naming are not files we
	// wrote: left alone.
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".model.npz.tmp-5"), 0o755))
	require.NoError(t, os.Symlink("model.npz.bak", filepath.Join(dir, ".model.npz.tmp-6")))
	kept = append(kept, ".model.npz.tmp-5", ".model.npz.tmp-6")

	require.NoError(t, Write(path, writeString("new")))
	want := append([]string{"model.npz"}, kept...)
	require.ElementsMatch(t, want, listDir(t, dir))
	require.Equal(t, "new", readFile(t, path))

	// A checkpoint-style rewrite cleans too (and a failed write as well:
	// cleaning precedes writing).
	mk(".model.npz.tmp-77", old)
	require.Error(t, Write(path, func(io.Writer) error { return errors.New("boom") }))
	require.ElementsMatch(t, want, listDir(t, dir))
}

func TestPrepareCommitAndDiscard(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	require.NoError(t, os.WriteFile(a, []byte("old a"), 0o600))

	pa, err := Prepare(a, writeString("new a"))
	require.NoError(t, err)
	pb, err := Prepare(b, writeString("new b"))
	require.NoError(t, err)
	require.Equal(t, a, pa.Path())
	// Nothing is in place before the commit.
	require.Equal(t, "old a", readFile(t, a))
	_, err = os.Stat(b)
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, CommitAll(pa, nil, pb))
	require.Equal(t, "new a", readFile(t, a))
	require.Equal(t, "new b", readFile(t, b))
	st, err := os.Stat(a)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "the replaced file keeps its mode")
	require.ElementsMatch(t, []string{"a.txt", "b.txt"}, listDir(t, dir))
	require.Error(t, pa.Commit(), "a second commit")

	// Discard leaves the target and removes the temporary file.
	pd, err := Prepare(a, writeString("discarded"))
	require.NoError(t, err)
	pd.Discard()
	pd.Discard()
	(*Pending)(nil).Discard()
	require.Error(t, pd.Commit())
	require.Equal(t, "new a", readFile(t, a))
	require.ElementsMatch(t, []string{"a.txt", "b.txt"}, listDir(t, dir))

	// A failing commit discards the later ones: the first target is
	// replaced, the ones after the failure are not, and no temporary file
	// remains.
	p1, err := Prepare(a, writeString("third a"))
	require.NoError(t, err)
	p2, err := Prepare(filepath.Join(dir, "c.txt"), writeString("c"))
	require.NoError(t, err)
	p3, err := Prepare(b, writeString("third b"))
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "c.txt"), 0o755)) // the rename now fails
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.txt", "x"), nil, 0o600))
	require.Error(t, CommitAll(p1, p2, p3))
	require.Equal(t, "third a", readFile(t, a))
	require.Equal(t, "new b", readFile(t, b))
	require.ElementsMatch(t, []string{"a.txt", "b.txt", "c.txt"}, listDir(t, dir))

	// Prepare fails like Write, leaving nothing behind.
	_, err = Prepare(a, func(io.Writer) error { return errors.New("boom") })
	require.ErrorContains(t, err, "boom")
	require.ElementsMatch(t, []string{"a.txt", "b.txt", "c.txt"}, listDir(t, dir))
	require.PanicsWithValue(t, "outfile: Prepare of "+a+" with a nil write function", func() { _, _ = Prepare(a, nil) })
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	require.NoError(t, CheckWritable(filepath.Join(dir, "new.txt")))
	require.NoError(t, CheckWritable(file))
	require.Equal(t, []string{"f.txt"}, listDir(t, dir), "the check leaves nothing behind")

	var pe *fs.PathError
	for _, c := range []struct {
		path string
		err  error
	}{
		{filepath.Join(dir, "missing", "x.txt"), fs.ErrNotExist},
		{filepath.Join(file, "x.txt"), syscall.ENOTDIR},
		{dir, syscall.EISDIR},
		{dir + "/", nil},
	} {
		err := CheckWritable(c.path)
		require.Error(t, err, c.path)
		require.ErrorAs(t, err, &pe)
		require.Equal(t, c.path, pe.Path)
		if c.err != nil {
			require.ErrorIs(t, err, c.err, c.path)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o555))
		require.ErrorIs(t, CheckWritable(filepath.Join(ro, "x.txt")), fs.ErrPermission)
	}
	t.Chdir(dir)
	require.NoError(t, CheckWritable("rel.txt"))
}
