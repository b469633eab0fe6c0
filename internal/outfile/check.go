package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Std is the path that names standard input (for an input) or standard
// output (for an output).
const Std = "-"

// File is a file a command names in a flag: the flag (for messages, e.g.
// "--out"), its path, and what the command can do with Std.
type File struct {
	Flag string
	Path string
	// Stream reports whether the flag accepts Std: an input read from
	// standard input, an output written to standard output. Without it,
	// Check refuses Std with Why.
	Stream bool
	// Why says why the flag cannot take Std (e.g. "a checkpoint is
	// rewritten during the run"), for the usage error.
	Why string
	// Glob marks an input path that is a pattern (filepath.Match syntax):
	// every file it matches is an input.
	Glob bool
	// Regular marks an output that must be a regular file (or a path
	// where one is created), such as a checkpoint rewritten during a run
	// and read back: Check refuses a device, FIFO or socket there (see
	// CheckRegular), with Why, as it refuses Std, instead of writing
	// through.
	Regular bool
}

// ErrUsage is wrapped by the errors of Check that are mistakes in the
// command line: an output that is an input or another output, Std given
// twice or where a flag cannot take it.
var ErrUsage = errors.New("usage")

// usageError is an error of Check that wraps ErrUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// Check validates a command's files before it does any work:
//   - Std is refused for a flag that cannot stream (File.Stream), and
//     standard input or output named by two flags;
//   - an output is refused when it is the same file as an input (any file
//     an input's glob matches) or another output: the same path after
//     symbolic links are resolved (see SameFile), or existing files that
//     os.SameFile identifies (hard links);
//   - an output marked Regular must not be a device, FIFO or socket
//     (CheckRegular), nor Std;
//   - every output other than Std must be writable (CheckWritable).
//
// Empty paths are skipped. Paths naming an object store ("scheme://...")
// are compared as strings only. The errors of the first two kinds wrap
// ErrUsage; an output that cannot be written is a plain error naming the
// flag and the path.
func Check(inputs, outputs []File) error {
	var stdin, stdout *File
	for _, list := range []struct {
		files []File
		std   **File
		what  string
	}{{inputs, &stdin, "standard input"}, {outputs, &stdout, "standard output"}} {
		for i := range list.files {
			f := &list.files[i]
			if f.Path != Std {
				continue
			}
			if !f.Stream {
				why := f.Why
				if why == "" {
					why = "it needs a file"
				}
				return usagef("%s cannot be %s (-): %s", f.Flag, list.what, why)
			}
			if *list.std != nil {
				return usagef("%s and %s both name %s (-)", (*list.std).Flag, f.Flag, list.what)
			}
			*list.std = f
		}
	}
	for i, o := range outputs {
		if o.Path == "" || o.Path == Std {
			continue
		}
		for _, in := range inputs {
			if in.Path == "" || in.Path == Std {
				continue
			}
			paths := []string{in.Path}
			if in.Glob && !remote(in.Path) {
				if m, err := filepath.Glob(in.Path); err == nil {
					paths = append(paths, m...)
				}
			}
			for _, p := range paths {
				if SameFile(o.Path, p) {
					if p != in.Path {
						return usagef("%s %s is %s, an input file of %s: it would be overwritten", o.Flag, o.Path, p, in.Flag)
					}
					return usagef("%s %s is the input file of %s: it would be overwritten", o.Flag, o.Path, in.Flag)
				}
			}
		}
		for _, p := range outputs[:i] {
			if p.Path != "" && p.Path != Std && SameFile(o.Path, p.Path) {
				return usagef("%s and %s name the same file %s", p.Flag, o.Flag, o.Path)
			}
		}
	}
	for _, o := range outputs {
		if o.Path == "" || o.Path == Std || remote(o.Path) {
			continue
		}
		var nr *notRegular
		if err := CheckRegular(o.Path); o.Regular && errors.As(err, &nr) && nr.kind != "directory" {
			why := o.Why
			if why == "" {
				why = "it needs a regular file"
			}
			return usagef("%s %s is a %s: %s", o.Flag, o.Path, nr.kind, why)
		}
		if err := CheckWritable(o.Path); err != nil {
			return fmt.Errorf("%s: cannot write %s: %w", o.Flag, o.Path, unwrapPath(err))
		}
	}
	return nil
}

// ErrNotRegular is wrapped by the errors of CheckRegular.
var ErrNotRegular = errors.New("not a regular file")

// notRegular is an existing file that is not a regular file: kind says
// what it is.
type notRegular struct {
	path, kind string
}

func (e *notRegular) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.path, e.kind)
}

func (e *notRegular) Unwrap() error { return ErrNotRegular }

// CheckRegular returns an error wrapping ErrNotRegular when path's target
// (symbolic links followed, as Write follows them) exists and is not a
// regular file: a device, a named pipe (FIFO), a socket or a directory,
// which the error names. A regular file, a path that does not exist yet
// and a dangling link's missing target pass. path is never opened, so a
// FIFO without a reader cannot block it. Other errors (a path that cannot
// be examined) are returned as they are.
func CheckRegular(path string) error {
	_, st, err := resolve(path)
	if err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st == nil || st.Mode().IsRegular() {
		return nil
	}
	kind := "special file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return &notRegular{path: path, kind: kind}
}

// remote reports whether path names an object store ("gs://bucket/x").
func remote(path string) bool { return strings.Contains(path, "://") }

// SameFile reports whether a and b name the same file: the same canonical
// path (absolute, cleaned, symbolic links of the file and of its directory
// resolved, so that files that do not exist yet compare too), or existing
// files that os.SameFile identifies (hard links). Paths naming an object
// store ("scheme://...") are compared as strings.
func SameFile(a, b string) bool {
	if remote(a) || remote(b) {
		return a == b
	}
	if canonical(a) == canonical(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// canonical returns path's target (see resolve) as an absolute path with
// the directory's symbolic links resolved where the directory exists.
func canonical(path string) string {
	target, _, err := resolve(path)
	if err != nil {
		target = path
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if abs, err := filepath.Abs(filepath.Join(dir, base)); err == nil {
		return abs
	}
	return filepath.Clean(target)
}

// Set collects a command's outputs as pending content (see Prepare) so that
// they are put in place together at the end (Commit), or not at all
// (Discard). Std goes to Stdout, written at Commit.
type Set struct {
	Stdout io.Writer
	ps     []*Pending
}

// Add prepares path's new content; an empty path is skipped. For Std the
// content is produced by Commit, into s.Stdout.
func (s *Set) Add(path string, write func(w io.Writer) error) error {
	if path == "" {
		return nil
	}
	if path == Std {
		if s.Stdout == nil {
			return &fs.PathError{Op: "write", Path: Std, Err: errors.New("no standard output in this set")}
		}
		s.ps = append(s.ps, &Pending{path: Std, write: write, stdout: s.Stdout})
		return nil
	}
	p, err := Prepare(path, write)
	if err != nil {
		return err
	}
	s.ps = append(s.ps, p)
	return nil
}

// Commit puts the pending contents in place, in the order they were
// added (see CommitAll).
func (s *Set) Commit() error {
	err := CommitAll(s.ps...)
	s.ps = nil
	return err
}

// Discard drops every pending content not committed; it is safe to defer.
func (s *Set) Discard() {
	for _, p := range s.ps {
		p.Discard()
	}
	s.ps = nil
}

// WriteStd writes the bytes produced by write to stdout (through a 64 KiB
// buffer, flushed) when path is Std, else to path by Write.
func WriteStd(path string, stdout io.Writer, write func(w io.Writer) error) error {
	if path == Std {
		if err := writeStream(stdout, write); err != nil {
			return fmt.Errorf("standard output: %w", err)
		}
		return nil
	}
	return Write(path, write)
}
