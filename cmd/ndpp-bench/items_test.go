package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// onlineAlgos are the algorithms infer --items runs for --algos all.
const onlineAlgos = "stream-partition,online-lss,online-2neighbor,online-greedy"

// itemsRows parses infer --json output into its rows without the timings.
func itemsRows(t *testing.T, out string) []inferResult {
	t.Helper()
	var res struct {
		Results []inferResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	for i := range res.Results {
		res.Results[i].Seconds, res.Results[i].ItemsPerSec = 0, 0
	}
	return res.Results
}

func runWith(stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb, stdin: stdin}, args)
	return code, out.String(), errb.String()
}

// TestItemsPipeEqualsSynthetic: `items --synthetic … | infer --items -`
// gives infer --synthetic's results with the same seed (solutions as ids,
// values, evaluations, swaps, stashes), for NPY and text streams, plain and
// gzip-compressed, with and without a diagonal, also through a pipe with
// both commands running at once.
func TestItemsPipeEqualsSynthetic(t *testing.T) {
	dir := t.TempDir()
	for _, diag := range []string{"0", "0.3"} {
		common := []string{"--n", "3000", "--d", "5", "--seed", "4", "--diag", diag}
		code, out, errs := runWith(strings.NewReader(""), append([]string{"infer", "--synthetic", "--algos", onlineAlgos, "--k", "6", "--json", "--quiet"}, common...)...)
		if code != 0 {
			t.Fatalf("infer --synthetic: exit %d: %s", code, errs)
		}
		want := itemsRows(t, out)
		if len(want) != 4 {
			t.Fatalf("%d rows", len(want))
		}
		kernel := filepath.Join(dir, "k"+diag+".npz")
		for _, format := range []string{"npy", "text"} {
			code, stream, errs := runWith(strings.NewReader(""), append([]string{"items", "--synthetic", "--format", format, "--kernel-out", kernel, "--quiet"}, common...)...)
			if code != 0 {
				t.Fatalf("items: exit %d: %s", code, errs)
			}
			var zipped bytes.Buffer
			zw := gzip.NewWriter(&zipped)
			zw.Write([]byte(stream))
			zw.Close()
			args := []string{"infer", "--items", "-", "--kernel", kernel, "--k", "6", "--json", "--quiet"}
			if format == "text" {
				args = append(args, "--n", "3000") // stream-partition's n
			}
			for name, in := range map[string][]byte{"plain": []byte(stream), "gzip": zipped.Bytes(), "no read-ahead": []byte(stream)} {
				args := args
				if name == "no read-ahead" {
					args = append(args[:len(args):len(args)], "--read-ahead", "0")
				}
				code, out, errs := runWith(bytes.NewReader(in), args...)
				if code != 0 {
					t.Fatalf("%s %s diag %s: infer --items: exit %d: %s", format, name, diag, code, errs)
				}
				got := itemsRows(t, out)
				if !jsonEqual(got, want) {
					t.Errorf("%s %s diag %s: infer --items\n%+v\nwant (infer --synthetic)\n%+v", format, name, diag, got, want)
				}
			}
		}
		// A real pipe, both commands at once: infer waits for the stream's
		// first bytes, written after the kernel file.
		kernel2 := filepath.Join(dir, "pipe"+diag+".npz")
		pr, pw := io.Pipe()
		done := make(chan int)
		go func() {
			var errb bytes.Buffer
			c := run(&env{stdout: pw, stderr: &errb, stdin: strings.NewReader("")}, append([]string{"items", "--synthetic", "--kernel-out", kernel2, "--quiet"}, common...))
			pw.Close()
			done <- c
		}()
		code, out, errs = runWith(pr, "infer", "--items", "-", "--kernel", kernel2, "--k", "6", "--json", "--quiet")
		pr.Close()
		if c := <-done; c != 0 || code != 0 {
			t.Fatalf("pipe: items exit %d, infer exit %d: %s", c, code, errs)
		}
		if got := itemsRows(t, out); !jsonEqual(got, want) {
			t.Errorf("pipe diag %s: %+v, want %+v", diag, got, want)
		}
	}
}

// TestItemsBytesEqualRandom: the NPY stream of items --synthetic is, byte
// for byte, the header and the rows [v; b; δ] of ndpp.Random's model with
// the same flags, over more than one of the command's chunks of 4,096
// items.
func TestItemsBytesEqualRandom(t *testing.T) {
	const n, d = 5000, 3
	for _, diag := range []float64{0, 0.3} {
		m := ndpp.Random(n, d, 6, ndpp.RandomOptions{Diag: diag})
		width := 2 * d
		if diag > 0 {
			width++
		}
		want := npz.AppendNPYHeader(nil, "<f8", []int{n, width})
		for i := range n {
			row := append(append([]float64(nil), m.ItemV(i)...), m.ItemB(i)...)
			if diag > 0 {
				row = append(row, m.ItemDiag(i))
			}
			for _, x := range row {
				want = binary.LittleEndian.AppendUint64(want, math.Float64bits(x))
			}
		}
		code, out, errs := runWith(strings.NewReader(""), "items", "--synthetic", "--n", strconv.Itoa(n), "--d", strconv.Itoa(d), "--seed", "6", "--diag", strconv.FormatFloat(diag, 'g', -1, 64), "--quiet")
		if code != 0 {
			t.Fatalf("diag %v: exit %d: %s", diag, code, errs)
		}
		if !bytes.Equal([]byte(out), want) {
			t.Errorf("diag %v: the stream (%d bytes) differs from ndpp.Random's rows (%d bytes)", diag, len(out), len(want))
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestInferItemsErrors: usage errors of --items, and bad rows named.
func TestInferItemsErrors(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "k.npz")
	code, stream, errs := runWith(strings.NewReader(""), "items", "--synthetic", "--n", "50", "--d", "3", "--format", "text", "--kernel-out", kernel, "--quiet")
	if code != 0 {
		t.Fatalf("items: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(stream), "\n")
	bad := strings.Join(lines[:10], "\n") + "\n10 1 2 3 4 5\n"
	nan := strings.Join(lines[:3], "\n") + "\n3 1 2 NaN 4 5 6\n"
	huge := strings.Join(lines[:5], "\n") + "\n5 1 2 3 4 5 1e90\n" + strings.Join(lines[6:], "\n")
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{stream, []string{"--items", "-"}, "--kernel M.npz goes with --items"},
		{stream, []string{"--kernel", kernel, "--synthetic"}, "--kernel M.npz goes with --items"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--model", kernel}, "give exactly one of"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--k", "3"}, "stream-partition needs the stream's length in advance"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--algos", "offline-greedy"}, "needs all items in memory"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--polish"}, "--polish needs all items"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--order", "random"}, "--order applies to models"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--k", "7"}, "exceeds 2d = 6"},
		{bad, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--k", "3"}, "line 11: 6 fields; want 7"},
		{nan, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--k", "3"}, "line 4: v_3 = NaN is not finite"},
		{nan, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--k", "3", "--read-ahead", "0"}, "line 4: v_3 = NaN is not finite"},
		{huge, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--k", "3"}, "line 6: ndpp: the kernel's values overflow float64: its scale"},
		{stream, []string{"--items", "-", "--kernel", kernel, "--algos", "online-lss", "--read-ahead", "-1"}, "--read-ahead must be in [0, 1024]"},
		{stream, []string{"--items", filepath.Join(dir, "missing.txt"), "--kernel", kernel}, "no such file"},
		{stream, []string{"--synthetic", "--format", "npy"}, "--format applies to --items only"},
	} {
		code, _, errs := runWith(strings.NewReader(tc.stdin), append([]string{"infer", "--quiet"}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("infer %v: exit %d, stderr %q; want an error containing %q", tc.args, code, errs, tc.want)
		}
	}
	// A text stream with --n runs all four online algorithms.
	code, out, errs := runWith(strings.NewReader(stream), "infer", "--items", "-", "--kernel", kernel, "--n", "50", "--k", "3", "--json", "--quiet")
	if code != 0 || len(itemsRows(t, out)) != 4 {
		t.Fatalf("text stream with --n: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{{"--n", "0"}, {"--format", "csv"}, {"--float32", "--format", "text"}, {}} {
		code, _, _ := runWith(strings.NewReader(""), append([]string{"items", "--quiet"}, append(args, "--synthetic")...)...)
		if len(args) == 0 {
			if code != 0 {
				t.Errorf("items --synthetic: exit %d", code)
			}
		} else if code == 0 {
			t.Errorf("items %v: exit 0", args)
		}
	}
}
