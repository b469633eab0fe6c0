package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestRun writes a small table and basket file and checks the ids: first
// appearance among rows with Quantity > 0, from 1, codes trimmed and inner
// spaces written as underscores; an item the table lacks is an error naming
// its line, and the output never replaces an input.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "t.parquet")
	rows := []row{
		{"C1", -2},          // a return: not counted
		{"B2 ", 1},          // id 1 ("B2")
		{"BANK CHARGES", 1}, // id 2
		{"C1", 3},           // id 3
		{"B2", 5},           // seen
		{"D4", 0},           // not counted
		{"A0", 1},           // id 4
	}
	if err := parquet.WriteFile(pq, rows); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "b.txt")
	if err := os.WriteFile(in, []byte("A0 B2\nC1\nBANK_CHARGES C1 A0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ids.txt")
	if err := run(pq, in, out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "4 1\n3\n2 3 4\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}

	if err := os.WriteFile(in, []byte("A0\nD4 B2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(pq, in, out)
	if err == nil || !strings.Contains(err.Error(), `b.txt:2: item "D4"`) {
		t.Errorf("unknown code: err = %v", err)
	}
	if got2, _ := os.ReadFile(out); string(got2) != string(got) {
		t.Errorf("a failed run changed the earlier output: %q", got2)
	}
	if err := run(pq, in, in); err == nil {
		t.Error("-out equal to -baskets: no error")
	}
}
