package outfile

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StaleAge is the age (time since the last modification) from which a
// temporary file of Write's naming is taken to be left over by an
// interrupted writer and removed by the next Write of the same target.
const StaleAge = time.Minute

// Write puts the bytes produced by write at path under the package's
// policy (see the package documentation): a regular file, new or existing,
// is replaced atomically; a symbolic link's target is replaced atomically
// and the link kept; a device, FIFO or socket is opened for writing and
// written through, never replaced. It is Prepare followed by Commit.
//
// A regular file's data goes to a temporary file in the target's directory
// (so that the final rename does not cross file systems), through a 64 KiB
// buffer that is flushed and fsynced before the temporary file is renamed
// over the target; the directory is then synced (best effort) so the
// rename itself is durable. If write returns an error or panics, or any
// step fails, the temporary file is removed and the target is left
// untouched. An existing file's permission bits are kept; a new file gets
// 0644.
//
// The temporary file is named ".NAME.tmp-DIGITS" for a target NAME. A
// writer killed before it could remove its temporary file leaves it behind;
// Write removes such files of the same target that are regular files older
// than StaleAge (and nothing else: not other names, not younger files, which
// may belong to a concurrent writer).
//
// Errors are *fs.PathError values with Op "write" and the path, wrapping the
// cause (write's own error included), in the style of package os. A nil
// write is a programmer error and panics.
func Write(path string, write func(w io.Writer) error) error {
	if write == nil {
		panic("outfile: Write of " + path + " with a nil write function")
	}
	p, err := Prepare(path, write)
	if err != nil {
		return err
	}
	return p.Commit()
}

// Pending is new content for a file, complete and synced in a temporary
// file next to its target but not yet in place: Commit puts it there,
// Discard drops it. It lets a program that writes several files write all
// of them before it replaces any (see CommitAll). For a device, FIFO or
// socket, which is written through and not replaced, the content is
// produced by Commit (a Set's standard output likewise).
type Pending struct {
	path, target, tmp string
	write             func(w io.Writer) error // written through at Commit
	stdout            io.Writer               // with write: the stream, not a file
	done              bool
}

// Prepare writes the bytes produced by write to a temporary file next to
// path's target (path itself, or the file a symbolic link at path leads
// to; see Write), flushed, fsynced and closed, and returns it pending:
// the target is not touched until Commit. On any failure, a panic in write
// included, the temporary file is removed. Stale temporary files of the
// same target are removed first (see Write). When the target is a device,
// a FIFO or a socket, nothing is written here: Commit opens it and runs
// write. A nil write panics.
func Prepare(path string, write func(w io.Writer) error) (p *Pending, err error) {
	if write == nil {
		panic("outfile: Prepare of " + path + " with a nil write function")
	}
	fail := func(err error) error { return &fs.PathError{Op: "write", Path: path, Err: err} }
	target, st, err := resolve(path)
	if err != nil {
		return nil, fail(err)
	}
	dir, base, err := split(target)
	if err != nil {
		return nil, fail(err)
	}
	perm := fs.FileMode(0o644)
	if st != nil {
		switch {
		case st.IsDir():
			return nil, fail(syscall.EISDIR)
		case !st.Mode().IsRegular():
			return &Pending{path: path, target: target, write: write}, nil
		}
		perm = st.Mode().Perm()
	}
	RemoveStale(target)
	f, err := createTemp(dir, base)
	if err != nil {
		return nil, fail(unwrapPath(err))
	}
	tmp := f.Name()
	done := false
	defer func() {
		// Runs on errors and on panics in write: never leave the
		// temporary file behind.
		if !done {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return nil, fail(err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return nil, fail(err)
	}
	if err := f.Sync(); err != nil {
		return nil, fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		done = true
		return nil, fail(err)
	}
	done = true
	return &Pending{path: path, target: target, tmp: tmp}, nil
}

// Path returns the path the pending content was prepared for (as given;
// "-" for a Set's standard output).
func (p *Pending) Path() string { return p.path }

// Commit puts the pending content in place: it renames the temporary file
// over the target and syncs the directory (best effort), or, for a device,
// FIFO or socket, opens it write-only (without creating or truncating it)
// and writes the content through. After a failed rename the temporary
// file is removed and the target is untouched. Commit after Commit or
// Discard is an error.
func (p *Pending) Commit() error {
	if p.done {
		return &fs.PathError{Op: "write", Path: p.path, Err: errors.New("pending content already committed or discarded")}
	}
	p.done = true
	if p.write != nil {
		if p.stdout != nil {
			if err := writeStream(p.stdout, p.write); err != nil {
				return &fs.PathError{Op: "write", Path: "standard output", Err: err}
			}
			return nil
		}
		return writeThrough(p.path, p.target, p.write)
	}
	if err := os.Rename(p.tmp, p.target); err != nil {
		_ = os.Remove(p.tmp)
		return &fs.PathError{Op: "write", Path: p.path, Err: unwrapPath(err)}
	}
	// Make the rename durable. Not every platform can sync a directory;
	// the data itself is already on disk, so failures here are ignored.
	if d, derr := os.Open(filepath.Dir(p.target)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// writeThrough writes to an existing device, FIFO or socket: opened
// write-only, never created, truncated or replaced. A FIFO's open waits
// for a reader, as a shell's redirection does.
func writeThrough(path, target string, write func(w io.Writer) error) (err error) {
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = &fs.PathError{Op: "write", Path: path, Err: unwrapPath(cerr)}
		}
	}()
	if err := writeStream(f, write); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	return nil
}

// writeStream runs write into w through a 64 KiB buffer and flushes it.
func writeStream(w io.Writer, write func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// unwrapPath returns the cause of a *fs.PathError (whose text would repeat
// a path), or err.
func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// Discard removes the pending content; the target is untouched. It does
// nothing after Commit or Discard, and on a nil Pending.
func (p *Pending) Discard() {
	if p == nil || p.done {
		return
	}
	p.done = true
	if p.tmp != "" {
		_ = os.Remove(p.tmp)
	}
}

// CommitAll commits the pending contents in order (nil entries are
// skipped). When a commit fails, the later ones are discarded and the error
// is returned: the targets committed before it are replaced, the others are
// not.
func CommitAll(ps ...*Pending) error {
	for i, p := range ps {
		if p == nil {
			continue
		}
		if err := p.Commit(); err != nil {
			for _, q := range ps[i+1:] {
				q.Discard()
			}
			return err
		}
	}
	return nil
}

// CheckWritable reports whether Write could write path, without touching
// it: path's target (see Write) is an existing device, FIFO or socket, or
// names a file (not a directory) in an existing directory in which a file
// can be created. For the latter the check creates and removes a temporary
// file of Write's naming in that directory. Errors are *fs.PathError values
// naming path.
func CheckWritable(path string) error {
	fail := func(err error) error { return &fs.PathError{Op: "write", Path: path, Err: err} }
	target, tst, err := resolve(path)
	if err != nil {
		return fail(err)
	}
	dir, base, err := split(target)
	if err != nil {
		return fail(err)
	}
	if tst != nil {
		if tst.IsDir() {
			return fail(syscall.EISDIR)
		}
		if !tst.Mode().IsRegular() {
			return nil
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fail(unwrapPath(err))
	}
	if !st.IsDir() {
		return fail(syscall.ENOTDIR)
	}
	f, err := createTemp(dir, base)
	if err != nil {
		return fail(unwrapPath(err))
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fail(unwrapPath(err))
	}
	return nil
}

// CheckDir reports whether files can be created in the directory dir,
// without leaving any: dir exists, is a directory (symbolic links
// followed), and a temporary file of Write's naming can be created in it
// and removed. A path naming an object store ("scheme://...") is not
// checked. Errors are *fs.PathError values naming dir.
func CheckDir(dir string) error {
	if remote(dir) {
		return nil
	}
	fail := func(err error) error { return &fs.PathError{Op: "write", Path: dir, Err: err} }
	st, err := os.Stat(dir)
	if err != nil {
		return fail(unwrapPath(err))
	}
	if !st.IsDir() {
		return fail(syscall.ENOTDIR)
	}
	f, err := createTemp(dir, "check")
	if err != nil {
		return fail(unwrapPath(err))
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fail(unwrapPath(err))
	}
	return nil
}

// maxLinks bounds the symbolic links resolve follows, as the kernel's own
// limit does (ELOOP).
const maxLinks = 40

// resolve follows the symbolic links at path (its last component; a
// link's relative target is taken from the link's directory) and returns
// the file that is written, with its FileInfo, or nil when it does not
// exist yet (a new file, or the missing target of a dangling link).
func resolve(path string) (string, fs.FileInfo, error) {
	target := path
	for range maxLinks {
		st, err := os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return target, nil, nil
		}
		if err != nil {
			return "", nil, unwrapPath(err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return target, st, nil
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, unwrapPath(err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = link
	}
	return "", nil, syscall.ELOOP
}

// RemoveStale removes the temporary files that Write and Prepare leave
// behind for the target path when their process is killed: regular files
// named ".NAME.tmp-DIGITS" (NAME the base name of path, DIGITS the decimal
// suffix of at most 10 digits that Write uses) in path's directory, last
// modified at least StaleAge ago. Nothing else is touched, and errors
// (an unreadable directory, a file that vanished) are ignored: cleaning is
// best effort. Write and Prepare call it.
func RemoveStale(path string) {
	dir, base, err := split(path)
	if err != nil {
		return
	}
	prefix := "." + base + ".tmp-"
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	defer d.Close()
	now := time.Now()
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			name := e.Name()
			if !isTempName(name, prefix) || !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() || now.Sub(info.ModTime()) < StaleAge {
				continue
			}
			_ = os.Remove(filepath.Join(dir, name))
		}
		if err != nil {
			return
		}
	}
}

// isTempName reports whether name is prefix followed by 1 to 10 decimal
// digits (a uint32 in decimal, as createTemp writes it).
func isTempName(name, prefix string) bool {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok || len(s) == 0 || len(s) > 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// createTemp creates a new file ".BASE.tmp-DIGITS" in dir, mode 0600, with
// DIGITS a random uint32 in decimal.
func createTemp(dir, base string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if os.IsExist(err) && try < 10000 {
			continue
		}
		return f, err
	}
}

// split returns the directory ("." for a bare name) and the base name of
// path, and an error when path names no file.
func split(path string) (dir, base string, err error) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return "", "", errors.New("not a file name")
	}
	return dir, base, nil
}
