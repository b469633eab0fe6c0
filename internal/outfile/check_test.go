package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSymlinkTargetIsReplacedAndLinkKept(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	require.NoError(t, os.Mkdir(models, 0o755))
	realFile := filepath.Join(models, "realFile.npz")
	require.NoError(t, os.WriteFile(realFile, []byte("old"), 0o600))
	link := filepath.Join(dir, "current.npz")
	require.NoError(t, os.Symlink("models/realFile.npz", link)) // relative
	// A chain: link2 → current.npz → models/realFile.npz.
	link2 := filepath.Join(dir, "latest.npz")
	require.NoError(t, os.Symlink(link, link2))

	before, err := os.Stat(realFile)
	require.NoError(t, err)
	require.NoError(t, Write(link, writeString("new")))
	requireLink(t, link, "models/realFile.npz")
	require.Equal(t, "new", readFile(t, realFile))
	st, err := os.Stat(realFile)
	require.NoError(t, err)
	require.False(t, os.SameFile(before, st), "the target was written in place, not replaced by a rename")
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "the target's mode is kept")

	require.NoError(t, Write(link2, writeString("newer")))
	requireLink(t, link2, link)
	requireLink(t, link, "models/realFile.npz")
	require.Equal(t, "newer", readFile(t, realFile))
	require.Equal(t, []string{"current.npz", "latest.npz", "models"}, listDir(t, dir))
	require.Equal(t, []string{"realFile.npz"}, listDir(t, models))

	// A failed write leaves link and target alone, and no temporary file.
	boom := errors.New("boom")
	require.Error(t, Write(link, func(w io.Writer) error { return boom }))
	require.Equal(t, "newer", readFile(t, realFile))
	require.Equal(t, []string{"realFile.npz"}, listDir(t, models))

	// Prepare/Commit through the link.
	p, err := Prepare(link, writeString("pending"))
	require.NoError(t, err)
	require.Equal(t, "newer", readFile(t, realFile), "replaced before Commit")
	require.NoError(t, p.Commit())
	require.Equal(t, "pending", readFile(t, realFile))
	requireLink(t, link, "models/realFile.npz")

	// A dangling link: its target is created, the link kept.
	dangling := filepath.Join(dir, "next.npz")
	require.NoError(t, os.Symlink("models/next.npz", dangling))
	require.NoError(t, CheckWritable(dangling))
	require.NoError(t, Write(dangling, writeString("created")))
	requireLink(t, dangling, "models/next.npz")
	require.Equal(t, "created", readFile(t, filepath.Join(models, "next.npz")))

	// A loop is an error, not a hang.
	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink("loop", loop))
	require.Error(t, Write(loop, writeString("x")))
	require.Error(t, CheckWritable(loop))
}

func requireLink(t *testing.T, link, want string) {
	t.Helper()
	got, err := os.Readlink(link)
	require.NoError(t, err, "%s is no longer a symbolic link", link)
	require.Equal(t, want, got)
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "train-1.txt")
	require.NoError(t, os.WriteFile(data, []byte("1 2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train-2.txt"), []byte("1 2\n"), 0o644))
	hard := filepath.Join(dir, "hard.txt")
	require.NoError(t, os.Link(data, hard))
	soft := filepath.Join(dir, "soft.txt")
	require.NoError(t, os.Symlink("train-1.txt", soft))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	subLink := filepath.Join(dir, "sublink")
	require.NoError(t, os.Symlink("sub", subLink))
	out := filepath.Join(dir, "out.npz")

	in := func(path string) []File { return []File{{Flag: "--data", Path: path}} }
	outs := func(paths ...string) []File {
		var fs []File
		for i, p := range paths {
			fs = append(fs, File{Flag: []string{"--out", "--trace"}[i], Path: p, Stream: true})
		}
		return fs
	}
	cases := []struct {
		name    string
		inputs  []File
		outputs []File
		usage   string // "" = accepted
	}{
		{"distinct", in(data), outs(out), ""},
		{"empty paths skipped", in(""), outs("", out), ""},
		{"output is input", in(data), outs(data), "input file of --data"},
		{"other spelling", in(data), outs(dir + "/./sub/../train-1.txt"), "input file of --data"},
		{"relative and absolute", in(data), outs(relTo(t, data)), "input file of --data"},
		{"hard link", in(data), outs(hard), "input file of --data"},
		{"symlink to the input", in(data), outs(soft), "input file of --data"},
		{"input through a symlink", in(soft), outs(data), "input file of --data"},
		{"glob match", []File{{Flag: "--data", Path: filepath.Join(dir, "train-*.txt"), Glob: true}}, outs(filepath.Join(dir, "train-2.txt")), "an input file of --data"},
		{"glob without match", []File{{Flag: "--data", Path: filepath.Join(dir, "train-*.txt"), Glob: true}}, outs(out), ""},
		{"two outputs", in(data), outs(out, out), "--out and --trace name the same file"},
		{"two new outputs via a directory link", in(data), outs(filepath.Join(sub, "x"), filepath.Join(subLink, "x")), "same file"},
		{"two outputs via a file link", in(""), outs(data, soft), "same file"},
		{"stdout", in(data), outs(Std), ""},
		{"stdout twice", in(data), outs(Std, Std), "--out and --trace both name standard output"},
		{"stdin and stdout", []File{{Flag: "--data", Path: Std, Stream: true}}, outs(Std), ""},
		{"stdin twice", []File{{Flag: "--a", Path: Std, Stream: true}, {Flag: "--b", Path: Std, Stream: true}}, nil, "--a and --b both name standard input"},
		{"stdin refused", []File{{Flag: "--model", Path: Std, Why: "a model is read by seeking"}}, nil, "--model cannot be standard input (-): a model is read by seeking"},
		{"stdout refused", nil, []File{{Flag: "--checkpoint", Path: Std}}, "--checkpoint cannot be standard output (-)"},
		{"remote compared as strings", []File{{Flag: "--data", Path: "gs://b/x", Glob: true}}, []File{{Flag: "--out", Path: "gs://b/x"}}, "input file of --data"},
		{"remote distinct", []File{{Flag: "--data", Path: "gs://b/x"}}, []File{{Flag: "--out", Path: "gs://b/y"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.inputs, c.outputs)
			if c.usage == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUsage)
			require.ErrorContains(t, err, c.usage)
		})
	}
	require.Equal(t, []string{"hard.txt", "soft.txt", "sub", "sublink", "train-1.txt", "train-2.txt"}, listDir(t, dir), "Check created or left a file")

	// Unwritable outputs: a plain error naming the flag.
	for _, p := range []string{filepath.Join(dir, "missing", "x"), sub} {
		err := Check(nil, []File{{Flag: "--trace", Path: p}})
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrUsage)
		require.ErrorContains(t, err, "--trace: cannot write "+p)
	}
}

// relTo returns path relative to the working directory.
func relTo(t *testing.T, path string) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, path)
	require.NoError(t, err)
	return rel
}

// TestCheckDir: a directory where files can be created passes (and keeps
// no file of the check); a missing path, a file and a link to a file are
// refused as *fs.PathError values naming the path.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, CheckDir(dir))
	require.Empty(t, listDir(t, dir))
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("file", link))
	for p, want := range map[string]error{filepath.Join(dir, "missing"): fs.ErrNotExist, file: nil, link: nil} {
		err := CheckDir(p)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe, p)
		require.Equal(t, p, pe.Path)
		if want != nil {
			require.ErrorIs(t, err, want)
		} else {
			require.ErrorContains(t, err, "not a directory")
		}
	}
	require.NoError(t, CheckDir("gs://bucket/work"), "object stores are not checked")
}
