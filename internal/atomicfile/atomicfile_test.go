package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
	require.PanicsWithValue(t, "atomicfile: Write of "+path+" with a nil write function", func() { _ = Write(path, nil) })

	// A relative path in the working directory works.
	t.Chdir(dir)
	require.NoError(t, Write("rel.txt", writeString("rel")))
	require.Equal(t, "rel", readFile(t, "rel.txt"))
}
