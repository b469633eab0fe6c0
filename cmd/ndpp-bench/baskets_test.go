package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TestBasketsWritesTheSyntheticStream: the file holds the stream of
// baskets.NewSynthetic, line by line, and learn reads it.
func TestBasketsWritesTheSyntheticStream(t *testing.T) {
	code, out, errs := runCmd(t, "", "baskets", "--synthetic", "--n", "50", "--count", "30", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	src, err := baskets.NewSynthetic(baskets.SyntheticOptions{N: 50, Count: 30, MeanSize: 8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 30 {
		t.Fatalf("%d lines, want 30", len(lines))
	}
	got, err := baskets.ReadFile(writeTempFile(t, out), baskets.LineOptions{N: 50})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		want, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b, want) {
			t.Fatalf("basket %d: %v, want %v", i, b, want)
		}
	}
	path := filepath.Join(t.TempDir(), "b.txt")
	if code, _, errs := runCmd(t, "", "baskets", "--synthetic", "--n", "50", "--count", "30", "--seed", "7", "--out", path); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != out {
		t.Fatalf("--out wrote other bytes (%v)", err)
	}
	for _, bad := range [][]string{{"baskets"}, {"baskets", "--synthetic", "--n", "0"}, {"baskets", "--synthetic", "--mean-size", "0.5"}} {
		if code, _, _ := runCmd(t, "", bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
}

func writeTempFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
