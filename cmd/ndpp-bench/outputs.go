package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ndpp-go/ndpp/internal/atomicfile"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// pathFlag is a file named by a flag: the flag (for messages) and the path.
type pathFlag struct {
	flag, path string
}

// checkPaths validates a command's output files before it does any work:
// every output's directory accepts a new file, and no output is the same
// file as an input or as another output (compared as cleaned absolute paths
// and, where both exist, with os.SameFile). Empty paths and "-" (standard
// input or output) are skipped. Collisions are usage errors; an output that
// cannot be written is a plain error naming the flag and the path.
func checkPaths(inputs, outputs []pathFlag) error {
	live := func(ps []pathFlag) []pathFlag {
		var out []pathFlag
		for _, p := range ps {
			if p.path != "" && p.path != "-" {
				out = append(out, p)
			}
		}
		return out
	}
	inputs, outputs = live(inputs), live(outputs)
	for i, o := range outputs {
		for _, in := range inputs {
			if samePath(o.path, in.path) {
				return usagef("%s %s is the input file of %s: it would be overwritten", o.flag, o.path, in.flag)
			}
		}
		for _, p := range outputs[:i] {
			if samePath(o.path, p.path) {
				return usagef("%s and %s name the same file %s", p.flag, o.flag, o.path)
			}
		}
	}
	for _, o := range outputs {
		if err := atomicfile.CheckWritable(o.path); err != nil {
			return fmt.Errorf("%s: cannot write %s: %w", o.flag, o.path, unwrapPath(err))
		}
	}
	return nil
}

// unwrapPath returns the cause of a *fs.PathError (whose text repeats the
// path), or err.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// samePath reports whether a and b name the same file: equal cleaned
// absolute paths, or existing files that os.SameFile identifies (hard
// links, symbolic links, other spellings).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// outputSet collects a command's outputs as pending files (written in
// full next to their targets, see atomicfile.Prepare) so that they replace
// their targets together at the end (commit), or not at all (discard).
type outputSet struct {
	ps []*atomicfile.Pending
}

// add prepares path's new content; an empty path is skipped.
func (s *outputSet) add(path string, write func(w io.Writer) error) error {
	if path == "" {
		return nil
	}
	p, err := atomicfile.Prepare(path, write)
	if err != nil {
		return err
	}
	s.ps = append(s.ps, p)
	return nil
}

// commit replaces the targets by the pending contents.
func (s *outputSet) commit() error {
	err := atomicfile.CommitAll(s.ps...)
	s.ps = nil
	return err
}

// discard drops every pending content not committed; it is safe to defer.
func (s *outputSet) discard() {
	for _, p := range s.ps {
		p.Discard()
	}
	s.ps = nil
}

// loadModel reads a model file within the memory budget and refuses a
// model whose kernel overflows float64 (ndpp.Model.CheckScale): its scores
// would be NaN or infinite.
func loadModel(path string, budget memlimit.Budget) (*ndpp.Model, error) {
	m, err := npz.LoadOptions{MaxBytes: budget.Bytes}.Load(path)
	if err != nil {
		return nil, budget.Rename(err)
	}
	if err := m.CheckScale(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// modelFileError classifies an error of loadModel for commands that treat
// a bad model file as a usage error (exit 2): a model beyond the memory
// budget or one that overflows is a runtime error (exit 1), as elsewhere.
func modelFileError(err error) error {
	var me *memlimit.Error
	if errors.As(err, &me) || errors.Is(err, ndpp.ErrOverflow) {
		return err
	}
	return usageError{err.Error()}
}
