package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitFiles lists the repository's tracked files (`git ls-files -s`: mode
// and slash-separated path relative to the repository root, which is
// returned too). It skips the test when git or the repository is missing
// (a module copy outside a clone).
func gitFiles(t *testing.T) (root string, modes map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git work tree")
	}
	root = strings.TrimSpace(string(out))
	cmd := exec.Command("git", "ls-files", "-s", "-z")
	cmd.Dir = root
	out, err = cmd.Output()
	require.NoError(t, err)
	modes = map[string]string{}
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		// <mode> <object> <stage>\t<path>
		meta, p, ok := strings.Cut(rec, "\t")
		require.True(t, ok, "git ls-files -s record %q", rec)
		modes[p] = strings.Fields(meta)[0]
	}
	require.NotEmpty(t, modes)
	return root, modes
}

// TestNoExecutableCommitted: no compiled program is tracked — no file
// starts like an ELF, Mach-O or PE executable — and every file tracked as
// executable is a script (starts with "#!").
func TestNoExecutableCommitted(t *testing.T) {
	root, modes := gitFiles(t)
	magics := [][]byte{
		{0x7f, 'E', 'L', 'F'},
		{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
		{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
		{0xca, 0xfe, 0xba, 0xbe},
		{'M', 'Z'},
	}
	for p, mode := range modes {
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(p)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		require.NoError(t, err)
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		head = head[:n]
		for _, m := range magics {
			require.False(t, bytes.HasPrefix(head, m), "%s is a compiled executable: build outputs are never committed", p)
		}
		if mode == "100755" {
			require.True(t, bytes.HasPrefix(head, []byte("#!")), "%s is tracked as executable but is not a script", p)
		}
	}
}

// TestBuildOutputsIgnored: wherever `go build` puts a command of the
// repository — in the command's own directory or in any directory above it
// that it is built from, with or without .exe — .gitignore ignores it, and
// the source directories themselves are not ignored.
func TestBuildOutputsIgnored(t *testing.T) {
	root, modes := gitFiles(t)
	mains := map[string]bool{}
	for p := range modes {
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(p)), nil, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		if f.Name.Name == "main" {
			mains[path.Dir(p)] = true
		}
	}
	require.Contains(t, mains, "cmd/ndpp-bench")
	ignored := func(p string) bool {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		cmd.Dir = root
		err := cmd.Run()
		if err == nil {
			return true
		}
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return false
		}
		require.NoError(t, err, "git check-ignore %s", p)
		return false
	}
	for dir := range mains {
		name := path.Base(dir)
		require.False(t, ignored(dir+"/main.go"), "%s is ignored: .gitignore must ignore build outputs, not source directories", dir)
		for d := dir; ; d = path.Dir(d) {
			for _, out := range []string{name, name + ".exe"} {
				p := path.Join(d, out)
				if p == dir {
					continue // `go build` refuses to write over the directory
				}
				require.True(t, ignored(p), "`go build` in %s writes %s, which .gitignore does not ignore", d, p)
			}
			if d == "." {
				break
			}
		}
	}
}
