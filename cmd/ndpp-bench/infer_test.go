package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

func runInferArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb, stdin: strings.NewReader("")}, append([]string{"infer"}, args...))
	return code, out.String(), errb.String()
}

func TestInferJSON(t *testing.T) {
	code, out, errs := runInferArgs(t, "--synthetic", "--n", "300", "--d", "4", "--k", "4", "--seed", "3", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if errs != "" {
		t.Errorf("--quiet wrote to stderr: %q", errs)
	}
	var raw map[string][]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(raw) != 1 || raw["results"] == nil {
		t.Fatalf("top level %v, want only results", raw)
	}
	want := []string{"algo", "det_evals", "items", "items_per_sec", "k", "log_value", "seconds", "solution", "stash", "swaps"}
	var algos []string
	for _, r := range raw["results"] {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Errorf("keys %v, want %v", keys, want)
		}
		var a string
		_ = json.Unmarshal(r["algo"], &a)
		algos = append(algos, a)
		var sol []int
		if err := json.Unmarshal(r["solution"], &sol); err != nil || len(sol) != 4 {
			t.Errorf("%s: solution %s", a, r["solution"])
		}
		var lv *float64
		if err := json.Unmarshal(r["log_value"], &lv); err != nil || lv == nil {
			t.Errorf("%s: log_value %s", a, r["log_value"])
		}
		var items int
		_ = json.Unmarshal(r["items"], &items)
		if items != 300 {
			t.Errorf("%s: items %d, want 300", a, items)
		}
	}
	if !slices.Equal(algos, inferAlgos) {
		t.Errorf("algos %v, want %v", algos, inferAlgos)
	}
}

func inferSolutions(t *testing.T, args ...string) map[string][]int {
	t.Helper()
	code, out, errs := runInferArgs(t, append(args, "--json", "--quiet")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Results []inferResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	sols := map[string][]int{}
	for _, r := range res.Results {
		sols[r.Algo] = r.Solution
	}
	return sols
}

// TestInferFastNaive: the fast and the naive oracle give the same solutions,
// on synthetic models without and with a diagonal (k > 2d there).
func TestInferFastNaive(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		for _, order := range []string{"id", "random"} {
			args := []string{"--synthetic", "--n", "400", "--d", "5", "--k", "5", "--seed", seed, "--order", order,
				"--algos", "stream-partition,online-lss,online-2neighbor,online-greedy", "--alpha", "1.05"}
			if seed == "3" {
				args = append(args, "--diag", "0.01", "--k", "7", "--d", "3") // k > 2d = 6
			}
			fast := inferSolutions(t, append(args, "--oracle", "fast")...)
			naive := inferSolutions(t, append(args, "--oracle", "naive")...)
			if len(fast) != 4 {
				t.Fatalf("%d results", len(fast))
			}
			for a, s := range naive {
				if !slices.Equal(fast[a], s) {
					t.Errorf("seed %s order %s %s: fast %v, naive %v", seed, order, a, fast[a], s)
				}
			}
		}
	}
}

func TestInferUsageErrors(t *testing.T) {
	syn := []string{"--synthetic", "--n", "50", "--d", "3"}
	cases := [][]string{
		{}, // neither --model nor --synthetic
		{"--model", "x.npz", "--synthetic"},
		{"--model", filepath.Join(t.TempDir(), "missing.npz")},
		append(slices.Clone(syn), "--k", "0"),
		append(slices.Clone(syn), "--k", "7"),                 // > 2d
		append(slices.Clone(syn), "--diag", "1", "--k", "51"), // > n
		append(slices.Clone(syn), "--diag", "-1"),
		append(slices.Clone(syn), "--diag", "NaN"),
		append(slices.Clone(syn), "--diag", "+Inf"),
		{"--model", "x.npz", "--diag", "1"},
		{"--synthetic", "--n", "5", "--d", "4", "--k", "6"}, // > n
		append(slices.Clone(syn), "--alpha", "0.9"),
		append(slices.Clone(syn), "--alpha", "NaN"),
		append(slices.Clone(syn), "--algos", "online-lss,nope"),
		append(slices.Clone(syn), "--order", "backwards"),
		append(slices.Clone(syn), "--oracle", "magic"),
		append(slices.Clone(syn), "--every", "0"),
		append(slices.Clone(syn), "--stash-cap", "-1"),
		append(slices.Clone(syn), "--n", "x"),
		append(slices.Clone(syn), "extra"),
		{"--synthetic", "--n", "0"},
	}
	for _, args := range cases {
		code, out, errs := runInferArgs(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errs)
		}
		if strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || errs == "" {
			t.Errorf("%v: stderr is not one line: %q", args, errs)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
	}
	// A model file that is not a model is a one-line error, exit 2.
	bad := filepath.Join(t.TempDir(), "bad.npz")
	if err := os.WriteFile(bad, []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runInferArgs(t, "--model", bad); code != 2 {
		t.Errorf("corrupt model: exit %d (%s)", code, errs)
	}
	if code, _, errs := runInferArgs(t, "--help"); code != 0 || !strings.Contains(errs, "-alpha") || !strings.Contains(errs, "Example:") {
		t.Errorf("--help: exit %d, usage %q", code, errs)
	}
}

func TestInferTableAndTrajectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traj.csv")
	code, out, errs := runInferArgs(t, "--synthetic", "--n", "250", "--d", "3", "--k", "3", "--algos", "online-lss,online-greedy,offline-greedy",
		"--trajectory", path, "--every", "100", "--oracle", "naive")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, a := range []string{"online-lss", "online-greedy", "offline-greedy", "det evals"} {
		if !strings.Contains(out, a) {
			t.Errorf("table lacks %q:\n%s", a, out)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], trajectoryHeader) {
		t.Errorf("header %v", rows[0])
	}
	// Two online algorithms × samples at 100, 200 and 250 items.
	if len(rows) != 1+2*3 {
		t.Errorf("%d rows, want 7: %v", len(rows), rows)
	}
	if rows[3][1] != "250" || rows[3][0] != "online-lss" {
		t.Errorf("row 3 = %v", rows[3])
	}
}

// TestInferModelFile runs infer on a model saved with npz.Save.
func TestInferModelFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.npz")
	if err := npz.Save(path, ndpp.Random(120, 4, 9, ndpp.RandomOptions{})); err != nil {
		t.Fatal(err)
	}
	sols := inferSolutions(t, "--model", path, "--k", "3", "--oracle", "naive")
	if len(sols) != len(inferAlgos) {
		t.Fatalf("%d results", len(sols))
	}
	for a, s := range sols {
		if len(s) != 3 {
			t.Errorf("%s: solution %v", a, s)
		}
	}
	if code, _, errs := runInferArgs(t, "--model", path, "--k", "9"); code != 2 || !strings.Contains(errs, "exceeds 2d = 8") {
		t.Errorf("k > 2d on a model file: exit %d (%s)", code, errs)
	}
	// A model with a diagonal: k > 2d is a MAP problem like any other, and
	// every algorithm's value is the model's log det of its solution.
	md := ndpp.Random(120, 4, 9, ndpp.RandomOptions{Diag: 0.3})
	if err := npz.Save(path, md); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runInferArgs(t, "--model", path, "--k", "11", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("k = 11 > 2d on a model with a diagonal: exit %d (%s)", code, errs)
	}
	var res struct {
		Results []inferResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != len(inferAlgos) {
		t.Fatalf("%d results", len(res.Results))
	}
	for _, r := range res.Results {
		if len(r.Solution) != 11 || r.LogValue == nil {
			t.Errorf("%s: solution %v, log value %v", r.Algo, r.Solution, r.LogValue)
			continue
		}
		want, sign, err := md.LogDet(r.Solution)
		if err != nil || sign == 0 || math.Abs(want-*r.LogValue) > 1e-6*(1+math.Abs(want)) {
			t.Errorf("%s: log value %v, the model's log det %v (sign %v, %v)", r.Algo, *r.LogValue, want, sign, err)
		}
	}
	// A shared model (B = V) has rank d.
	if err := npz.Save(path, ndpp.Random(120, 4, 9, ndpp.RandomOptions{Shared: true})); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runInferArgs(t, "--model", path, "--k", "5"); code != 2 || !strings.Contains(errs, "exceeds d = 4") {
		t.Errorf("k > d on a B = V model: exit %d (%s)", code, errs)
	}
}

// TestInferAlgosAllPlus: "all" combines with the extra algorithms, in the
// order given, without duplicates.
func TestInferAlgosAllPlus(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"all", inferAlgos},
		{"all,local-search", append(slices.Clone(inferAlgos), "local-search")},
		{"local-search, all,offline-greedy", append([]string{"local-search"}, inferAlgos...)},
	} {
		code, out, errs := runInferArgs(t, "--synthetic", "--n", "60", "--d", "3", "--k", "3", "--algos", tc.spec, "--json", "--quiet")
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.spec, code, errs)
		}
		var res struct {
			Results []struct {
				Algo string `json:"algo"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		var got []string
		for _, r := range res.Results {
			got = append(got, r.Algo)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.spec, got, tc.want)
		}
	}
}
