package main

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/rerank"
	"github.com/ndpp-go/ndpp/stream"
)

// Example_readme is the README's "Using the library" snippet, so that the
// snippet is compiled with the packages it uses (TestREADMESnippet keeps the
// two the same). It has no Output comment and is not run: it reads files
// relative to the repository root and writes apparel.npz.
func Example_readme() {
	m, err := npz.Load("testdata/small-model.npz") // an *ndpp.Model: V, B (n×d), C (d×d), optional diagonal and ids
	if err != nil {
		panic(err)
	}
	ld, sign, err := m.LogDet([]int{3, 17, 42}) // log det L_S; sign 0 means det L_S = 0
	if err != nil {
		panic(err) // empty set, duplicate or out-of-range item
	}
	fmt.Println(ld, sign, ld-m.LogNormalizer()) // log P(S), the set's log-likelihood

	// Online MAP over a stream of the model's items, then local search from its solution.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // long calls take a context first
	defer cancel()
	o, _ := detcache.NewFast(m, 8)
	s, _ := stream.NewOnlineLSS(o, 8, stream.Options{Alpha: 1.1})
	res, _ := stream.Run(ctx, s, stream.RandomOrder(m.N(), 1), stream.RunOptions{})
	ls, _ := stream.LocalSearch(ctx, o, 8, res.Solution, stream.LocalSearchOptions{})
	fmt.Println(res.Solution, res.Value.Log, ls.Solution, ls.Value.Log)

	// Next items for a basket, and a diverse reranking of candidates by relevance.
	recs, _ := m.Recommend(ctx, []int{3, 17}, 5, ndpp.RecommendOptions{})
	var ws rerank.Workspace // one per goroutine (a sync.Pool in a server); the model is shared
	rr, _ := ws.Rerank(ctx, m, rerank.Request{
		Candidates: []int{1, 2, 3, 4, 5, 6, 7, 8},
		Relevance:  []float64{0.9, 0.8, 0.8, 0.7, 0.5, 0.4, 0.3, 0.1},
		Theta:      0.7,
		K:          4,
	})
	fmt.Println(recs, rr.Items, rr.Gains)

	// One-pass online learning from a basket file, streamed (parsed ahead); then the offline learner.
	br, _ := baskets.Open("testdata/1_100_100_100_apparel_regs.csv", baskets.LineOptions{ReadAhead: baskets.DefaultReadAhead})
	defer br.Close()
	lr, _ := learn.TrainOnline(context.Background(), br, learn.OnlineOptions{D: 30}, learn.OnlineRun{})
	_ = npz.Save("apparel.npz", lr.Model) // records the file's item ids; atomic; readable by numpy.load
	data, _ := baskets.ReadFile("testdata/1_100_100_100_apparel_regs.csv", baskets.LineOptions{Base: 1, N: 100})
	train, val, _, _ := baskets.HoldOutSlice(data, 300, 2000, 1) // the split of every command (package eval)
	off, _ := learn.TrainOffline(context.Background(), train, val, 100, learn.OfflineOptions{D: 30})
	fmt.Println(off.Passes, off.ValLLEps)
}

// TestREADMESnippet checks that the README's "Using the library" code is
// Example_readme: the same body as its func main, and imports of exactly
// the packages that body uses.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Using the library\n")
	require.True(t, ok, "README has no \"Using the library\" section")
	_, code, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "no Go block in the section")
	code, _, ok = strings.Cut(code, "```\n")
	require.True(t, ok, "unterminated Go block")
	snippetSrc := []byte("package main\n\n" + code)
	snippet, snippetBody := parseFunc(t, "README.md", snippetSrc, "main")

	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	self, exampleBody := parseFunc(t, "readme_test.go", src, "Example_readme")
	require.Equal(t, exampleBody.text, snippetBody.text, "the README's func main and Example_readme differ")

	// The packages the body uses (resolved through this file's imports)
	// are the ones the snippet imports.
	byName := map[string]string{}
	for _, is := range self.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		byName[path.Base(p)] = p
	}
	used := map[string]bool{}
	ast.Inspect(exampleBody.node, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && byName[id.Name] != "" {
				used[byName[id.Name]] = true
			}
		}
		return true
	})
	var imported []string
	for _, is := range snippet.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		imported = append(imported, p)
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(used)), imported, "the README's imports against the packages its code uses")
}

type funcBody struct {
	node *ast.BlockStmt
	text string
}

// parseFunc parses a Go file and returns it and the body of the named
// function.
func parseFunc(t *testing.T, name string, src []byte, fn string) (*ast.File, funcBody) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	require.NoError(t, err, "%s does not parse", name)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			b := fd.Body
			return f, funcBody{b, string(src[fset.Position(b.Lbrace).Offset+1 : fset.Position(b.Rbrace).Offset])}
		}
	}
	t.Fatalf("%s has no func %s", name, fn)
	return nil, funcBody{}
}

// TestREADMESnippetModelRecordsTheFileIDs checks that the model the README
// snippet learns (file ids as they are, no N) records the file's 1-based
// ids, so that eval and score read the same file by the same mapping.
func TestREADMESnippetModelRecordsTheFileIDs(t *testing.T) {
	br, err := baskets.Open("../../testdata/1_100_100_100_apparel_regs.csv", baskets.LineOptions{})
	require.NoError(t, err)
	defer br.Close()
	lr, err := learn.TrainOnline(context.Background(), br, learn.OnlineOptions{D: 5}, learn.OnlineRun{MaxBaskets: 2000})
	require.NoError(t, err)
	ids := lr.Model.IDs()
	require.Len(t, ids, lr.Model.N())
	for _, id := range ids {
		require.True(t, id >= 1 && id <= 100, "id %d", id)
	}
	// The model's vocabulary maps each id token to its row.
	voc := lr.Model.TokenVocab()
	for r, id := range ids {
		row, ok := voc.Lookup(strconv.FormatInt(id, 10))
		require.True(t, ok)
		require.Equal(t, r, row)
	}
}

// TestDocsAreReferences checks that the large documents stay
// references: within their size bounds and free of commit hashes (the
// history of the measurements lives in the git log).
func TestDocsAreReferences(t *testing.T) {
	hexToken := regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	for _, doc := range []struct {
		path     string
		maxBytes int
	}{
		{"../../README.md", 25_500},
		{"../../learn/RESULTS.md", 15_000},
		{"../../learn/RANKING.md", 15_000},
		{"../../learn/TRADEOFF.md", 10_000},
		{"../../eval/MIXTURES.md", 5_000},
		{"../../stream/BENCHMARKS.md", 15_000},
	} {
		b, err := os.ReadFile(doc.path)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), doc.maxBytes, "%s has grown past its bound", doc.path)
		for _, tok := range hexToken.FindAllString(string(b), -1) {
			// A commit-like token mixes digits and the letters a–f; plain
			// numbers and words do not.
			if strings.ContainsAny(tok, "0123456789") && strings.ContainsAny(tok, "abcdef") {
				t.Errorf("%s holds %q, which looks like a commit hash", doc.path, tok)
			}
		}
	}
}
