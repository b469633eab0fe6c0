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

// TestRegularOutputsRefuseSpecialFiles: an output that must be a regular
// file (File.Regular) is refused by Check, as a usage error naming the
// flag, what the path is and why, when it is a FIFO, a socket or a device,
// also through a symbolic link, without opening it; a regular file, a new
// path and a dangling link pass. CheckRegular says the same.
func TestRegularOutputsRefuseSpecialFiles(t *testing.T) {
	const why = "it is rewritten during the run; give a file"
	pipe, _ := ndpptest.FIFO(t)
	defer ndpptest.ReleaseFIFO(pipe)
	specials := map[string]string{"named pipe (FIFO)": pipe, "socket": ndpptest.Socket(t)}
	if os.Geteuid() == 0 {
		specials["device"] = ndpptest.NullDevice(t)
	}
	dir := t.TempDir()
	for kind, path := range specials {
		link := filepath.Join(dir, "link-"+strings.Fields(kind)[0])
		require.NoError(t, os.Symlink(path, link))
		for _, p := range []string{path, link} {
			err := Check(nil, []File{{Flag: "--checkpoint", Path: p, Regular: true, Why: why}})
			require.ErrorIs(t, err, ErrUsage, p)
			require.EqualError(t, err, "--checkpoint "+p+" is a "+kind+": "+why)
			err = CheckRegular(p)
			require.ErrorIs(t, err, ErrNotRegular, p)
			require.ErrorContains(t, err, kind)
			// Without Regular, the policy writes through.
			require.NoError(t, Check(nil, []File{{Flag: "--out", Path: p}}))
		}
	}
	requireMode(t, pipe, fs.ModeNamedPipe)
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o644))
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "later"), dangling))
	for _, p := range []string{plain, filepath.Join(dir, "new"), dangling} {
		require.NoError(t, Check(nil, []File{{Flag: "--checkpoint", Path: p, Regular: true, Why: why}}))
		require.NoError(t, CheckRegular(p))
	}
	err := CheckRegular(dir)
	require.ErrorIs(t, err, ErrNotRegular)
	require.ErrorContains(t, err, "directory")
}
