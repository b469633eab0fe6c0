//go:build unix

package outfile

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// fifo makes a private named pipe read by a goroutine
// (ndpptest.FIFO); read returns what the writer wrote.
func fifo(t *testing.T) (path string, read func() string) {
	path, ch := ndpptest.FIFO(t)
	return path, func() string { return string(<-ch) }
}

func requireMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, want, st.Mode().Type(), "type of %s", path)
}

func TestDeviceIsWrittenThroughNotReplaced(t *testing.T) {
	dev := ndpptest.NullDevice(t)
	dir := filepath.Dir(dev)
	big := strings.Repeat("x", 200_000)
	require.NoError(t, Write(dev, writeString(big)))
	requireMode(t, dev, fs.ModeDevice|fs.ModeCharDevice)
	require.Equal(t, []string{"null"}, listDir(t, dir), "no temporary file")

	// Prepare writes nothing; Commit writes through; Discard leaves it.
	p, err := Prepare(dev, writeString("y"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	p, err = Prepare(dev, writeString("y"))
	require.NoError(t, err)
	p.Discard()
	requireMode(t, dev, fs.ModeDevice|fs.ModeCharDevice)

	// A symbolic link to the device: written through, link kept.
	link := filepath.Join(dir, "out")
	require.NoError(t, os.Symlink("null", link))
	require.NoError(t, Write(link, writeString("z")))
	requireMode(t, link, fs.ModeSymlink)
	requireMode(t, dev, fs.ModeDevice|fs.ModeCharDevice)
	require.NoError(t, CheckWritable(dev))
	require.NoError(t, Check(nil, []File{{Flag: "--out", Path: dev}}))

	// A Set with the device among regular files.
	reg := filepath.Join(dir, "reg.txt")
	var s Set
	require.NoError(t, s.Add(dev, writeString("a")))
	require.NoError(t, s.Add(reg, writeString("b")))
	require.NoError(t, s.Commit())
	requireMode(t, dev, fs.ModeDevice|fs.ModeCharDevice)
	require.Equal(t, "b", readFile(t, reg))
}

func TestFIFOIsWrittenThrough(t *testing.T) {
	big := strings.Repeat("0123456789", 50_000) // more than a pipe's buffer
	path, read := fifo(t)
	require.NoError(t, CheckWritable(path))
	require.NoError(t, Write(path, writeString(big)))
	require.Equal(t, big, read())
	requireMode(t, path, fs.ModeNamedPipe)
	require.Equal(t, []string{"pipe"}, listDir(t, filepath.Dir(path)))

	// Through a Set: written at Commit.
	path, read = fifo(t)
	var s Set
	require.NoError(t, s.Add(path, writeString("set")))
	require.NoError(t, s.Commit())
	require.Equal(t, "set", read())
	requireMode(t, path, fs.ModeNamedPipe)

	// Through a symbolic link to the FIFO.
	path, read = fifo(t)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(path, link))
	require.NoError(t, Write(link, writeString("linked")))
	require.Equal(t, "linked", read())
	requireMode(t, link, fs.ModeSymlink)
	requireMode(t, path, fs.ModeNamedPipe)
}

func TestSetWritesStdAtCommit(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	s := Set{Stdout: &out}
	require.NoError(t, s.Add(Std, writeString("to stdout")))
	require.Empty(t, out.String(), "written before Commit")
	require.NoError(t, s.Add(filepath.Join(dir, "f"), writeString("file")))
	require.NoError(t, s.Commit())
	require.Equal(t, "to stdout", out.String())
	require.Equal(t, []string{"f"}, listDir(t, dir), "no file named -")

	out.Reset()
	require.NoError(t, WriteStd(Std, &out, writeString("streamed")))
	require.Equal(t, "streamed", out.String())
	require.NoError(t, WriteStd(filepath.Join(dir, "g"), &out, writeString("file")))
	require.Equal(t, "streamed", out.String())
	require.Equal(t, "file", readFile(t, filepath.Join(dir, "g")))

	var noStdout Set
	require.Error(t, noStdout.Add(Std, writeString("x")))
}
