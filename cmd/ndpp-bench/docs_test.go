package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackageDocNamesEveryCommand: the package documentation (main.go's doc
// comment) names every registered command.
func TestPackageDocNamesEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc, "main.go has no package documentation")
	words := strings.FieldsFunc(f.Doc.Text(), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	})
	require.NotEmpty(t, commands)
	for name := range commands {
		require.True(t, slices.Contains(words, name), "the package documentation does not name the command %q", name)
	}
}

// TestCitedDocsExist: every docs/….md path that a Go file of the
// repository (the beam module included) cites is a file of the
// repository's docs folder.
func TestCitedDocsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	cite := regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]*\.md\b`)
	cited := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range cite.FindAllString(string(src), -1) {
			cited++
			_, err := os.Stat(filepath.Join(root, filepath.FromSlash(m)))
			require.NoError(t, err, "%s cites %s, which is not in the repository", path, m)
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, cited, "no Go file cites docs/…")
}
