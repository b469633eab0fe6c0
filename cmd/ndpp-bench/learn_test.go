package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/learn"
)

// learnJSONKeys are the fields of learn --json and eval --json.
var learnJSONKeys = []string{"auc", "auc_micro", "auc_paired", "auc_paired_se", "baseline_cooccurrence_mpr",
	"baseline_cooccurrence_mpr_micro", "baseline_cooccurrence_prec10", "baseline_cooccurrence_prec5", "baseline_independent_ll", "baseline_independent_ll_eps",
	"baseline_latent_class_ll", "baseline_latent_class_mpr", "baseline_latent_class_mpr_micro", "baseline_latent_class_prec10", "baseline_latent_class_prec5",
	"baseline_popularity_auc", "baseline_popularity_auc_paired", "baseline_popularity_mpr",
	"baseline_popularity_mpr_micro", "baseline_popularity_prec10", "baseline_popularity_prec5", "baskets", "d", "eps",
	"item_order", "mode", "mpr", "mpr_micro", "mpr_micro_se", "mpr_se", "paired_cooccurrence_mpr", "paired_cooccurrence_mpr_se",
	"paired_independent_ll", "paired_independent_ll_se", "passes", "peak_rss_bytes", "prec10", "prec10_micro", "prec5", "prec5_micro",
	"seconds", "test_baskets_beyond_rank", "test_ll", "test_ll_eps", "test_ll_eps_se", "test_ll_se"}

func runLearnCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb, stdin: strings.NewReader("")}, args)
	return code, out.String(), errb.String()
}

// smallApparel writes the first lines of the Amazon apparel registries to a
// temporary file.
func smallApparel(t *testing.T, lines int) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "1_100_100_100_apparel_regs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(f)
	for i := 0; i < lines && sc.Scan(); i++ {
		buf.WriteString(sc.Text() + "\n")
	}
	path := filepath.Join(t.TempDir(), "apparel-small.txt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeMetrics(t *testing.T, out string) map[string]any {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := learnJSONKeys
	if _, ok := raw["baseline_independent_ll"]; !ok { // eval without --train: no baselines
		want = slices.DeleteFunc(slices.Clone(want), func(k string) bool {
			return strings.HasPrefix(k, "baseline_") || strings.HasPrefix(k, "paired_")
		})
	}
	if raw["mode"] == "online" { // the online pass keeps no training baskets to fit it to
		want = slices.DeleteFunc(slices.Clone(want), func(k string) bool { return strings.HasPrefix(k, "baseline_latent_class_") })
	} else if v, ok := raw["baseline_latent_class_mpr"].(float64); ok && (v < 0 || v > 100) {
		t.Errorf("baseline_latent_class_mpr = %v, want a percentage", v)
	}
	if _, ok := peakRSS(); !ok || raw["mode"] == "eval" { // learn only, where the platform reports it
		want = slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k == "peak_rss_bytes" })
	} else if v, ok := raw["peak_rss_bytes"].(float64); !ok || v <= 0 || v != math.Trunc(v) {
		t.Errorf("peak_rss_bytes = %v, want a positive number of bytes", raw["peak_rss_bytes"])
	}
	// learn's validation figures (with --val > 0), the next-item term's
	// weight and, offline, its objective and what selected the model (and
	// with the rank objective whether the strong run did).
	if _, ok := raw["val_ll_eps"]; ok && raw["mode"] != "eval" {
		want = append(slices.Clone(want), "val_ll_eps")
		if raw["mode"] == "offline" {
			want = append(want, "val_mpr", "selected_by")
			if raw["objective"] == "rank" {
				want = append(want, "rank_strong")
			}
		}
	}
	if _, ok := raw["against"]; ok { // learn --against
		want = append(slices.Clone(want), "against", "against_mpr", "against_test_ll", "paired_against_mpr", "paired_against_mpr_se",
			"paired_against_test_ll", "paired_against_test_ll_se")
	}
	switch raw["mode"] {
	case "offline":
		want = append(slices.Clone(want), "objective", "next_weight")
	case "online":
		want = append(slices.Clone(want), "next_weight")
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if o := raw["item_order"]; o != "ids" && o != "first appearance" {
		t.Errorf("item_order = %v", o)
	}
	for _, k := range []string{"mpr", "mpr_micro", "prec5", "prec10", "prec5_micro", "prec10_micro"} {
		if v, ok := raw[k].(float64); !ok || v < 0 || v > 100 {
			t.Errorf("%s = %v, want a percentage", k, raw[k])
		}
	}
	for _, k := range []string{"auc", "auc_micro", "auc_paired"} {
		if v, ok := raw[k].(float64); !ok || v < 0 || v > 1 {
			t.Errorf("%s = %v, want a value in [0, 1]", k, raw[k])
		}
	}
	if v, ok := raw["test_ll"].(float64); !ok || v >= 0 || math.IsNaN(v) {
		t.Errorf("test_ll = %v", raw["test_ll"])
	}
	return raw
}

func TestLearnOfflineJSON(t *testing.T) {
	data := smallApparel(t, 1500)
	code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "offline", "--d", "11", "--seed", "2",
		"--val", "100", "--test", "300", "--epochs", "3", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if errs != "" {
		t.Errorf("--quiet wrote to stderr: %q", errs)
	}
	raw := decodeMetrics(t, out)
	if raw["mode"] != "offline" || raw["d"] != 11.0 {
		t.Errorf("mode %v d %v", raw["mode"], raw["d"])
	}
	if p := raw["passes"].(float64); p <= 0 || p > 3.5 {
		t.Errorf("passes = %v with --epochs 3", p)
	}
}

// TestLearnObjectiveFlags checks that --next-weight, --objective,
// --average and --reg-power with --alpha and --beta, and --early-decay
// reach the offline learner (each gives a different model from the
// defaults) and that the JSON says which objective trained the model and
// what selected it among the validation checks.
func TestLearnObjectiveFlags(t *testing.T) {
	data := smallApparel(t, 1500)
	var lls []float64
	for _, c := range []struct {
		extra      []string
		objective  string
		weights    []float64 // the next_weight reported: one of these
		selectedBy []string
	}{
		{[]string{"--next-weight", "0"}, "likelihood", []float64{0}, []string{"likelihood"}},
		{nil, "likelihood", []float64{learn.DefaultNextWeight}, []string{"likelihood"}},
		{[]string{"--next-weight", "2", "--next-share", "0.5", "--next-negatives", "8"}, "likelihood", []float64{2}, []string{"likelihood"}},
		// The strong run, then the plain one while no check is as likely
		// as the independent-items model (two epochs may not get there),
		// then retries at half the weight.
		{[]string{"--objective", "rank", "--rank-retries", "-1"}, "rank", []float64{learn.DefaultRankStrong().NextWeight, learn.DefaultRankNextWeight}, []string{"ranking", "likelihood"}},
		{[]string{"--objective", "rank"}, "rank", []float64{learn.DefaultRankStrong().NextWeight, learn.DefaultRankNextWeight, learn.DefaultRankNextWeight / 2, learn.DefaultRankNextWeight / 4}, []string{"ranking", "likelihood"}},
		{[]string{"--objective", "rank", "--rank-strong=false"}, "rank", []float64{learn.DefaultRankNextWeight, learn.DefaultRankNextWeight / 2, learn.DefaultRankNextWeight / 4}, []string{"ranking", "likelihood"}},
		{[]string{"--average", "1", "--alpha", "3", "--beta", "3"}, "likelihood", []float64{learn.DefaultNextWeight}, []string{"likelihood"}},
		{[]string{"--average", "1", "--alpha", "3", "--beta", "3", "--reg-power", "2"}, "likelihood", []float64{learn.DefaultNextWeight}, []string{"likelihood"}},
		{[]string{"--epochs", "5"}, "likelihood", []float64{learn.DefaultNextWeight}, []string{"likelihood"}},
		{[]string{"--epochs", "5", "--early-decay", "1"}, "likelihood", []float64{learn.DefaultNextWeight}, []string{"likelihood"}},
		{[]string{"--select", "objective"}, "likelihood", []float64{learn.DefaultNextWeight}, []string{"objective"}},
		{[]string{"--select", "ranking"}, "likelihood", []float64{learn.DefaultNextWeight, learn.DefaultNextWeight / 2, learn.DefaultNextWeight / 4}, []string{"ranking", "likelihood"}},
		{[]string{"--objective", "rank", "--rank-strong=false", "--rank-retries", "-1", "--select", "likelihood"}, "rank", []float64{learn.DefaultRankNextWeight}, []string{"likelihood"}},
	} {
		// A check a pass (two steps): --eval-every -1.
		args := append([]string{"learn", "--data", data, "--mode", "offline", "--d", "6", "--val", "100", "--test", "300", "--epochs", "2", "--eval-every", "-1", "--json", "--quiet"}, c.extra...)
		code, out, errs := runLearnCmd(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.extra, code, errs)
		}
		r := decodeMetrics(t, out)
		lls = append(lls, r["test_ll"].(float64))
		w, _ := r["next_weight"].(float64)
		if r["objective"] != c.objective || !slices.Contains(c.weights, w) || !slices.Contains(c.selectedBy, r["selected_by"].(string)) {
			t.Errorf("%v: objective %v, next_weight %v, selected_by %v", c.extra, r["objective"], r["next_weight"], r["selected_by"])
		}
		if v, ok := r["val_mpr"].(float64); !ok || !(v > 0 && v <= 100) {
			t.Errorf("%v: val_mpr %v", c.extra, r["val_mpr"])
		}
		if strong, ok := r["rank_strong"].(bool); ok != (c.objective == "rank") || strong != (c.objective == "rank" && w == learn.DefaultRankStrong().NextWeight) {
			t.Errorf("%v: rank_strong %v with next_weight %v", c.extra, r["rank_strong"], w)
		}
		if _, ok := r["val_ll_eps"].(float64); !ok {
			t.Errorf("%v: val_ll_eps %v", c.extra, r["val_ll_eps"])
		}
	}
	if lls[1] == lls[0] || lls[2] == lls[0] || lls[3] == lls[0] || lls[6] == lls[1] || lls[7] == lls[6] || lls[9] == lls[8] {
		t.Errorf("test LL %v: the objective flags changed nothing", lls)
	}
}

// learnFlagSweep runs learn with args and, for each value, flag set to it
// ("": unset), and returns each run's JSON metrics by value.
func learnFlagSweep(t *testing.T, args []string, flag string, values ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, v := range values {
		a := append(slices.Clone(args), "--json", "--quiet")
		if v != "" {
			a = append(a, flag, v)
		}
		code, stdout, errs := runLearnCmd(t, a...)
		if code != 0 {
			t.Fatalf("%s %q: exit %d: %s", flag, v, code, errs)
		}
		out[v] = decodeMetrics(t, stdout)
	}
	return out
}

// TestLearnStallsFlag checks that --stalls reaches the offline learner: a
// run ended by its first check without progress takes fewer passes than
// the same run bounded by --epochs alone.
func TestLearnStallsFlag(t *testing.T) {
	data := smallApparel(t, 1500)
	m := learnFlagSweep(t, []string{"learn", "--data", data, "--d", "6", "--val", "100", "--test", "300", "--epochs", "12", "--eval-every", "-1",
		"--lr", "0.2", "--patience", "50", "--tolerance", "-1"}, "--stalls", "1", "-1")
	one, none := m["1"]["passes"].(float64), m["-1"]["passes"].(float64)
	t.Logf("passes %v (--stalls 1), %v (-1)", one, none)
	if one >= none {
		t.Errorf("passes %v, %v: want fewer with --stalls 1", one, none)
	}
}

// TestLearnFlagDefaults: unset, --average, --next-carry, --next-max-carry
// and --floor-se take the learner's defaults (the same model as the
// default given explicitly), and another value reaches the learner (a
// different model): an explicit --average 0 turns the average off,
// --next-carry 1 weighs the term more on the baskets of two items or more
// (fewer than all here), and --next-max-carry 1 undoes that.
func TestLearnFlagDefaults(t *testing.T) {
	str := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, tc := range []struct {
		flag, def, other string
		args             []string
	}{
		{"--average", str(learn.DefaultAverage), "0", []string{"--d", "6", "--val", "100", "--test", "300", "--epochs", "6"}},
		{"--next-carry", str(learn.DefaultNextCarry), "1", []string{"--d", "10", "--val", "200", "--test", "300", "--epochs", "5"}},
		{"--next-max-carry", str(learn.DefaultNextMaxCarry), "1", []string{"--d", "10", "--val", "200", "--test", "300", "--epochs", "5", "--next-carry", "1"}},
	} {
		data := smallApparel(t, 3000)
		m := learnFlagSweep(t, append([]string{"learn", "--data", data}, tc.args...), tc.flag, "", tc.def, tc.other)
		ll := func(v string) float64 { return m[v]["test_ll"].(float64) }
		if ll("") != ll(tc.def) || ll(tc.other) == ll("") {
			t.Errorf("%s: test LL %v (unset), %v (%s), %v (%s): want the default equal to %s and %s different", tc.flag, ll(""), ll(tc.def), tc.def, ll(tc.other), tc.other, tc.def, tc.other)
		}
	}
}

// TestLearnFloorSEFlag: unset, --floor-se takes the learner's default
// (the same model as --floor-se 1), and a margin no check reaches leaves
// the ranking selection to the likelihood (selected_by).
func TestLearnFloorSEFlag(t *testing.T) {
	data := smallApparel(t, 6000)
	def := strconv.FormatFloat(learn.DefaultFloorSE, 'g', -1, 64)
	m := learnFlagSweep(t, []string{"learn", "--data", data, "--d", "10", "--val", "300", "--test", "500", "--epochs", "10", "--objective", "rank",
		"--next-weight", "0.1", "--rank-retries", "-1"}, "--floor-se", "", def, "0", "1000")
	if m[""]["test_ll"] != m[def]["test_ll"] {
		t.Errorf("test LL %v (unset), %v (--floor-se %s): the default is not --floor-se %s", m[""]["test_ll"], m[def]["test_ll"], def, def)
	}
	if by0, by1000 := m["0"]["selected_by"], m["1000"]["selected_by"]; by0 != "ranking" || by1000 != "likelihood" {
		t.Errorf("selected by %v (--floor-se 0), %v (1000): want ranking at 0, likelihood at 1000", by0, by1000)
	}
}

// TestLearnOnlineScheduleFlags checks that --factor-every, --lag and
// --c-every reach the learner: the synchronous exact schedule, a shorter
// lag and C stepped at every basket give a different model from the
// defaults.
func TestLearnOnlineScheduleFlags(t *testing.T) {
	data := smallApparel(t, 1500)
	var lls []float64
	for _, extra := range [][]string{nil, {"--factor-every", "1"}, {"--c-every", "1"}, {"--lag", "20"}} {
		args := append([]string{"learn", "--data", data, "--mode", "online", "--d", "11", "--val", "100", "--test", "300", "--json", "--quiet"}, extra...)
		code, out, errs := runLearnCmd(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		lls = append(lls, decodeMetrics(t, out)["test_ll"].(float64))
	}
	if lls[1] == lls[0] || lls[2] == lls[0] || lls[3] == lls[0] {
		t.Errorf("test LL %v: the schedule flags changed nothing", lls)
	}
}

func TestLearnOnlineThenEval(t *testing.T) {
	data := smallApparel(t, 1500)
	dir := t.TempDir()
	model, trace, ck := filepath.Join(dir, "m.npz"), filepath.Join(dir, "trace.csv"), filepath.Join(dir, "ck.bin")
	code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "11", "--val", "100", "--test", "300",
		"--out", model, "--trace", trace, "--checkpoint", ck, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	raw := decodeMetrics(t, out)
	if raw["passes"] != 1.0 || raw["baskets"] != 1100.0 {
		t.Errorf("passes %v baskets %v, want one pass over 1100 baskets", raw["passes"], raw["baskets"])
	}
	tr, err := os.ReadFile(trace)
	if err != nil || !strings.HasPrefix(string(tr), "mode,seconds,baskets,nll_eps\nonline,") {
		t.Errorf("trace file: %v %q", err, tr)
	}
	// Evaluating the saved model on the whole file: its tokens are the
	// model's vocabulary.
	code, out, errs = runLearnCmd(t, "eval", "--model", model, "--test", data, "--train", data, "--json")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, errs)
	}
	ev := decodeMetrics(t, out)
	if ev["mode"] != "eval" || ev["baskets"] != 1500.0 || ev["d"] != 11.0 {
		t.Errorf("eval mode %v baskets %v d %v", ev["mode"], ev["baskets"], ev["d"])
	}
	// Human output.
	code, out, _ = runLearnCmd(t, "eval", "--model", model, "--test", data, "--quiet")
	if code != 0 || !strings.Contains(out, "MPR") || !strings.Contains(out, "paper") || strings.Contains(out, "popularity") {
		t.Errorf("eval table (exit %d):\n%s", code, out)
	}
	// Without --train eval has no counts for the baselines: no baseline fields.
	code, out, _ = runLearnCmd(t, "eval", "--model", model, "--test", data, "--json", "--quiet")
	if ev := decodeMetrics(t, out); code != 0 || ev["baseline_popularity_mpr"] != nil {
		t.Errorf("eval without --train (exit %d): %s", code, out)
	}
	code, out, _ = runLearnCmd(t, "eval", "--model", model, "--test", data, "--train", data, "--quiet")
	if code != 0 || !strings.Contains(out, "popularity (paper)") || !strings.Contains(out, "independent items") {
		t.Errorf("eval table with baselines (exit %d):\n%s", code, out)
	}
	// eval --against: a second model of the same items on the same
	// baskets, paired (against itself: no difference); another catalogue's
	// model is refused.
	code, out, errs = runLearnCmd(t, "eval", "--model", model, "--test", data, "--against", model, "--json", "--quiet")
	if ev := decodeMetrics(t, out); code != 0 || ev["against_mpr"] != ev["mpr"] || ev["paired_against_mpr"] != 0.0 || ev["paired_against_test_ll"] != 0.0 {
		t.Errorf("eval --against itself (exit %d): %s%s", code, out, errs)
	}
	other := filepath.Join(dir, "other.npz")
	if code, _, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "4", "--val", "100", "--test", "300", "--max-size", "3", "--out", other, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs = runLearnCmd(t, "eval", "--model", model, "--test", data, "--against", other, "--quiet")
	if code != 1 || !strings.Contains(errs, "its items are not") {
		t.Errorf("eval --against a model of other items: exit %d: %s", code, errs)
	}
	// Resuming from the final checkpoint skips every basket and gives the
	// same model and metrics.
	code, out2, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "11", "--val", "100", "--test", "300",
		"--resume", ck, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("resume exit %d: %s", code, errs)
	}
	r2 := decodeMetrics(t, out2)
	if r2["test_ll"] != raw["test_ll"] || r2["mpr"] != raw["mpr"] || r2["baskets"] != 0.0 {
		t.Errorf("resumed: test_ll %v mpr %v baskets %v; want %v %v 0", r2["test_ll"], r2["mpr"], r2["baskets"], raw["test_ll"], raw["mpr"])
	}
	// A learning option given with another value than the checkpoint's is
	// refused, not ignored; the same value (or none) is accepted.
	for _, bad := range [][]string{{"--d", "20"}, {"--seed", "2"}, {"--optimizer", "sgd"}, {"--diag=false"}} {
		code, _, errs = runLearnCmd(t, append([]string{"learn", "--data", data, "--mode", "online", "--val", "100", "--test", "300", "--resume", ck, "--quiet"}, bad...)...)
		flagName := strings.SplitN(bad[0], "=", 2)[0]
		if code != 2 || !strings.Contains(errs, flagName+" ") || !strings.Contains(errs, "conflicts with the checkpoint") {
			t.Errorf("resume with %v: exit %d, %q; want 2 and a conflict naming %s", bad, code, errs, flagName)
		}
	}
	code, _, errs = runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--val", "100", "--test", "300", "--resume", ck, "--quiet")
	if code != 0 {
		t.Errorf("resume without --d: exit %d: %s", code, errs)
	}
}

func TestLearnAndEvalUsageErrors(t *testing.T) {
	data := smallApparel(t, 50)
	cases := [][]string{
		{"learn"},
		{"learn", "--data", data, "--mode", "sideways"},
		{"learn", "--data", data, "--format", "csv"},
		{"learn", "--data", data, "--format", "tsv"},
		{"learn", "--data", data, "--d", "0"},
		{"learn", "--data", data, "--lr", "-1"},
		{"learn", "--data", data, "--init-scale", "-1"},
		{"learn", "--data", data, "--tolerance", "NaN"},
		{"learn", "--data", data, "--floor-se", "NaN"},
		{"learn", "--data", data, "--floor-se", "Inf"},
		{"learn", "--data", data, "--mode", "online", "--floor-se", "1"},
		{"learn", "--data", data, "--mode", "online", "--eval-every", "5"},
		{"learn", "--data", data, "--next-carry", "1.5"},
		{"learn", "--data", data, "--next-carry", "-0.5"},
		{"learn", "--data", data, "--next-carry", "NaN"},
		{"learn", "--data", data, "--mode", "online", "--next-carry", "0.5"},
		{"learn", "--data", data, "--next-max-carry", "0.5"},
		{"learn", "--data", data, "--next-max-carry", "NaN"},
		{"learn", "--data", data, "--mode", "online", "--next-max-carry", "2"},
		{"learn", "--data", data, "--average", "-1"},
		{"learn", "--data", data, "--average", "Inf"},
		{"learn", "--data", data, "--mode", "online", "--average", "1"},
		{"learn", "--data", data, "--reg-power", "-2"},
		{"learn", "--data", data, "--mode", "online", "--reg-power", "2"},
		{"learn", "--data", data, "--early-decay", "-1"},
		{"learn", "--data", data, "--mode", "online", "--early-decay", "2"},
		{"learn", "--data", data, "--mode", "online", "--rank-strong=false"},
		{"learn", "--data", data, "--optimizer", "rmsprop"},
		{"learn", "--data", data, "--normalizer", "none"},
		{"learn", "--data", data, "--mode", "offline", "--checkpoint", "x"},
		{"learn", "--data", data, "--mode", "online", "--factor-every", "-1"},
		{"learn", "--data", data, "--mode", "online", "--c-every", "-2"},
		{"learn", "--data", data, "--mode", "offline", "--factor-every", "5"},
		{"learn", "--data", data, "--mode", "online", "--lag", "-1"},
		{"learn", "--data", data, "--mode", "offline", "--lag", "5"},
		{"learn", "--data", data, "--mode", "online", "--objective", "rank"},
		{"learn", "--data", data, "--mode", "offline", "--next-weight", "-1"},
		{"learn", "--data", data, "--mode", "offline", "--next-share", "0"},
		{"learn", "--data", data, "--mode", "offline", "--next-negatives", "0"},
		{"learn", "--data", data, "--mode", "online", "--next-negatives", "-3"},
		{"learn", "--data", data, "--mode", "offline", "--next-share", "1.5"},
		{"learn", "--data", data, "--mode", "online", "--next-share", "0.5"},
		{"learn", "--data", data, "--mode", "offline", "--d", "0"},
		{"learn", "--data", data, "--mode", "offline", "--objective", "ndcg"},
		{"learn", "--data", data, "--mode", "offline", "--select", "best"},
		{"learn", "--data", data, "--mode", "online", "--select", "likelihood"},
		{"learn", "--data", data, "extra"},
		{"eval"},
		{"eval", "--model", "m.npz"},
		{"eval", "--model", "m.npz", "--test", data, "--format", "csv", "--basket-col", "a"},
	}
	for _, c := range cases {
		code, _, errs := runLearnCmd(t, c...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c, code, errs)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: usage error not one line: %q", c, errs)
		}
	}
	// Data problems are failures (exit 1) with the reason.
	code, _, errs := runLearnCmd(t, "learn", "--data", filepath.Join(t.TempDir(), "missing.txt"))
	if code != 1 || !strings.Contains(errs, "missing.txt") {
		t.Errorf("missing file: exit %d %q", code, errs)
	}
	for _, mode := range []string{"offline", "online"} {
		code, _, errs = runLearnCmd(t, "learn", "--data", data, "--mode", mode, "--quiet")
		if code != 1 || !strings.Contains(errs, "need more than") {
			t.Errorf("%s, too few baskets: exit %d %q", mode, code, errs)
		}
	}
	code, _, errs = runLearnCmd(t, "eval", "--model", filepath.Join("..", "..", "testdata", "small-model.npz"), "--test", data)
	if code != 1 {
		t.Errorf("eval with out-of-range tokens: exit %d %q", code, errs)
	}
}

func TestLearnCSVFormat(t *testing.T) {
	code, out, errs := runLearnCmd(t, "learn", "--data", filepath.Join("..", "..", "testdata", "transactions.csv"), "--format", "csv",
		"--basket-col", "InvoiceNo", "--item-col", "StockCode", "--mode", "online", "--d", "4", "--val", "2", "--test", "3",
		"--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil || raw["mode"] != "online" {
		t.Fatalf("bad output %v: %s", err, out)
	}
}

// TestLearnReportsBasketsBeyondTheRank: with d = 1 (C = 0, L of rank 1)
// every test basket of two or more items has probability 0 under the model;
// learn says so on stderr, counts them in the JSON, and the test
// log-likelihood is finite through ε, beside the baselines.
func TestLearnReportsBasketsBeyondTheRank(t *testing.T) {
	data := smallApparel(t, 600)
	code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "1", "--diag=false", "--val", "50", "--test", "100", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "test baskets have more items than the model's rank 2d = 2") {
		t.Errorf("no rank note on stderr: %q", errs)
	}
	var r metricsJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.TestLLEps == nil || r.TestLL != nil || r.BeyondRank == 0 || r.Eps != eval.DefaultEps {
		t.Errorf("test_ll %v, test_ll_eps %v, beyond rank %d, eps %g: want null (probability 0), a finite ε figure, a positive count, ε = %g", r.TestLL, r.TestLLEps, r.BeyondRank, r.Eps, eval.DefaultEps)
	}
	if r.BaselineIndependentLL == nil || r.BaselinePopularityMPR == nil || r.BaselinePopularityMPRMicro == nil {
		t.Errorf("baselines missing: %s", out)
	}
}

// TestLearnItemOrder: the paper protocol orders a basket's items by their
// integer ids, or, when the tokens are not all integers, by first
// appearance; item_order says which. The same baskets written with
// integer ids in order of first appearance give the same paper figures.
func TestLearnItemOrder(t *testing.T) {
	ints := smallApparel(t, 1500)
	raw, err := os.ReadFile(ints)
	if err != nil {
		t.Fatal(err)
	}
	// Tokens "a<id>", and the same baskets with ids renumbered by first
	// appearance.
	seen := map[string]int{}
	var named, renum strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		for j, tok := range strings.Fields(line) {
			if _, ok := seen[tok]; !ok {
				seen[tok] = len(seen)
			}
			if j > 0 {
				named.WriteByte(' ')
				renum.WriteByte(' ')
			}
			named.WriteString("a" + tok)
			renum.WriteString(strconv.Itoa(seen[tok]))
		}
		named.WriteByte('\n')
		renum.WriteByte('\n')
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	get := func(data string) map[string]any {
		code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "5", "--seed", "3",
			"--val", "100", "--test", "300", "--json", "--quiet")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		return decodeMetrics(t, out)
	}
	byID, byName, byRenum := get(ints), get(write("named.txt", named.String())), get(write("renum.txt", renum.String()))
	if byID["item_order"] != "ids" || byName["item_order"] != "first appearance" || byRenum["item_order"] != "ids" {
		t.Errorf("item_order: ints %v, names %v, renumbered %v", byID["item_order"], byName["item_order"], byRenum["item_order"])
	}
	for _, k := range []string{"mpr", "mpr_micro", "prec5", "prec10", "baseline_popularity_mpr"} {
		if byName[k] != byRenum[k] {
			t.Errorf("%s: %v by first appearance, %v with ids in that order", k, byName[k], byRenum[k])
		}
	}
}

// TestLearnCooccurrenceBothModes checks that the online pass counts the
// co-occurrence baseline of the same training baskets as the offline
// learner (the same split, so the same figures), also when it resumes
// from a checkpoint and skips the baskets it has seen.
func TestLearnCooccurrenceBothModes(t *testing.T) {
	data := smallApparel(t, 1500)
	ck := filepath.Join(t.TempDir(), "ck.bin")
	common := []string{"learn", "--data", data, "--d", "5", "--seed", "3", "--val", "100", "--test", "300", "--json", "--quiet"}
	var runs []map[string]any
	for _, extra := range [][]string{{"--mode", "offline", "--epochs", "1"}, {"--mode", "online", "--checkpoint", ck}, {"--mode", "online", "--resume", ck}} {
		code, out, errs := runLearnCmd(t, append(slices.Clone(common), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		runs = append(runs, decodeMetrics(t, out))
	}
	for _, k := range []string{"baseline_cooccurrence_mpr", "baseline_cooccurrence_mpr_micro", "baseline_cooccurrence_prec5",
		"baseline_cooccurrence_prec10", "baseline_popularity_mpr"} {
		if runs[0][k] == nil || runs[1][k] != runs[0][k] || runs[2][k] != runs[0][k] {
			t.Errorf("%s: offline %v, online %v, resumed %v", k, runs[0][k], runs[1][k], runs[2][k])
		}
	}
	if !(runs[0]["baseline_cooccurrence_mpr"].(float64) > runs[0]["baseline_popularity_mpr"].(float64)) {
		t.Errorf("co-occurrence MPR %v not above popularity %v", runs[0]["baseline_cooccurrence_mpr"], runs[0]["baseline_popularity_mpr"])
	}
}

// TestLearnWithoutBaselines checks that --cooccurrence=false and
// --latent-class=false leave those baselines out (no baseline_… keys of
// theirs) and change nothing else: the model's figures and the other
// baselines are those of the default run, in both modes.
func TestLearnWithoutBaselines(t *testing.T) {
	data := smallApparel(t, 1500)
	common := []string{"learn", "--data", data, "--d", "5", "--seed", "3", "--val", "100", "--test", "300", "--json", "--quiet"}
	for _, mode := range [][]string{{"--mode", "offline", "--epochs", "1"}, {"--mode", "online"}} {
		for _, off := range []struct{ flag, prefix string }{{"--cooccurrence=false", "baseline_cooccurrence_"}, {"--latent-class=false", "baseline_latent_class_"}} {
			var runs []map[string]any
			for _, extra := range [][]string{nil, {off.flag}} {
				code, out, errs := runLearnCmd(t, append(append(slices.Clone(common), mode...), extra...)...)
				if code != 0 {
					t.Fatalf("%v %v: exit %d: %s", mode, extra, code, errs)
				}
				var r map[string]any
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("%v %v: %v", mode, extra, err)
				}
				runs = append(runs, r)
			}
			if _, ok := runs[0][off.prefix+"mpr"]; !ok && (mode[1] == "offline" || off.prefix == "baseline_cooccurrence_") {
				t.Fatalf("%v: no %smpr by default", mode, off.prefix)
			}
			for k, v := range runs[0] {
				switch {
				case strings.HasPrefix(k, off.prefix) || off.prefix == "baseline_cooccurrence_" && strings.HasPrefix(k, "paired_cooccurrence_"):
					if _, ok := runs[1][k]; ok {
						t.Errorf("%v: %s present with %s", mode, k, off.flag)
					}
				case k == "seconds" || k == "peak_rss_bytes":
				default:
					if !cmp.Equal(runs[1][k], v) {
						t.Errorf("%v: %s is %v with %s, %v without", mode, k, runs[1][k], off.flag, v)
					}
				}
			}
		}
	}
}

// savedSmallModel learns a model offline on the first lines of the
// apparel registries and saves it: the data file, the temporary directory,
// the model file and the command's arguments.
func savedSmallModel(t *testing.T) (data, dir, m string, common []string) {
	t.Helper()
	data = smallApparel(t, 1500)
	dir = t.TempDir()
	m = filepath.Join(dir, "m.npz")
	common = []string{"learn", "--data", data, "--mode", "offline", "--d", "6", "--val", "100", "--test", "300", "--epochs", "2", "--quiet"}
	if code, _, errs := runLearnCmd(t, append(slices.Clone(common), "--out", m)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return data, dir, m, common
}

// reversedFile writes the baskets of data in reverse order into dir: the
// items reach other rows.
func reversedFile(t *testing.T, data, dir string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(readFile(t, data)), "\n")
	slices.Reverse(lines)
	other := filepath.Join(dir, "reversed.csv")
	if err := os.WriteFile(other, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return other
}

// TestLearnStart: --start trains a saved model further (here with
// --objective rank), refuses a model of other items, and is an input no
// output may overwrite.
func TestLearnStart(t *testing.T) {
	data, dir, m, common := savedSmallModel(t)
	code, out, errs := runLearnCmd(t, append(slices.Clone(common), "--start", m, "--objective", "rank", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if r := decodeMetrics(t, out); r["objective"] != "rank" {
		t.Errorf("objective %v", r["objective"])
	}
	// The same baskets in reverse: the items reach other rows.
	other := reversedFile(t, data, dir)
	code, _, errs = runLearnCmd(t, "learn", "--data", other, "--mode", "offline", "--d", "6", "--val", "100", "--test", "300", "--epochs", "1", "--quiet", "--start", m)
	if code != 1 || !strings.Contains(errs, "--start") {
		t.Errorf("a model of other items: exit %d: %s", code, errs)
	}
	code, _, errs = runLearnCmd(t, append(slices.Clone(common), "--start", m, "--out", m)...)
	if code != 2 {
		t.Errorf("--out over --start: exit %d: %s", code, errs)
	}
	code, _, errs = runLearnCmd(t, append(slices.Clone(common), "--init-moments", "--json")...)
	if code != 0 {
		t.Errorf("--init-moments: exit %d: %s", code, errs)
	}
}

// TestLearnAgainst: --against evaluates a saved model on the same test
// baskets and reports the paired differences from it (none from the same
// model, which the same options and seed learn again), the paired
// differences from the baselines match the figures' differences, and a
// model of other items is refused.
func TestLearnAgainst(t *testing.T) {
	data, dir, m, common := savedSmallModel(t)
	code, out, errs := runLearnCmd(t, append(slices.Clone(common), "--against", m, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := decodeMetrics(t, out)
	f := func(k string) float64 {
		v, ok := r[k].(float64)
		if !ok {
			t.Fatalf("%s = %v", k, r[k])
		}
		return v
	}
	// The same options and seed learn the same model again.
	if r["against"] != m || f("against_mpr") != f("mpr") || f("paired_against_mpr") != 0 || f("paired_against_test_ll") != 0 {
		t.Errorf("against itself: %v %v %v %v", r["against"], r["against_mpr"], r["paired_against_mpr"], r["paired_against_test_ll"])
	}
	if got, want := f("paired_cooccurrence_mpr"), f("mpr")-f("baseline_cooccurrence_mpr"); math.Abs(got-want) > 1e-9 {
		t.Errorf("paired_cooccurrence_mpr = %v, want %v", got, want)
	}
	if got, want := f("paired_independent_ll"), f("test_ll")-f("baseline_independent_ll"); math.Abs(got-want) > 1e-9 {
		t.Errorf("paired_independent_ll = %v, want %v", got, want)
	}
	if f("paired_independent_ll_se") <= 0 || f("paired_independent_ll_se") >= f("test_ll_se") {
		t.Errorf("paired_independent_ll_se = %v, test_ll_se %v: pairing should narrow it", r["paired_independent_ll_se"], r["test_ll_se"])
	}
	// Another seed learns another model: its difference has a spread.
	code, out, errs = runLearnCmd(t, append(slices.Clone(common), "--against", m, "--seed", "2", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r = decodeMetrics(t, out)
	if se, ok := r["paired_against_test_ll_se"].(float64); !ok || se <= 0 {
		t.Errorf("paired_against_test_ll_se = %v", r["paired_against_test_ll_se"])
	}
	code, out, errs = runLearnCmd(t, append(slices.Clone(common), "--against", m)...)
	if code != 0 || !strings.Contains(out, "MPR − against (paired)") {
		t.Errorf("table: exit %d: %s%s", code, out, errs)
	}
	// A model of other items (the baskets reversed) is refused, and no
	// output may overwrite the --against file.
	other := reversedFile(t, data, dir)
	code, _, errs = runLearnCmd(t, "learn", "--data", other, "--d", "6", "--val", "100", "--test", "300", "--epochs", "1", "--quiet", "--against", m)
	if code != 1 || !strings.Contains(errs, "--against") {
		t.Errorf("a model of other items: exit %d: %s", code, errs)
	}
	code, _, errs = runLearnCmd(t, append(slices.Clone(common), "--against", m, "--out", m)...)
	if code != 2 {
		t.Errorf("--out over --against: exit %d: %s", code, errs)
	}
	code, _, errs = runLearnCmd(t, append(slices.Clone(common), "--against", filepath.Join(dir, "missing.npz"))...)
	if code == 0 || !strings.Contains(errs, "--against") {
		t.Errorf("a missing --against: exit %d: %s", code, errs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLearnOnlineNextWeight: one online pass uses the next-item term with
// --next-weight (JSON next_weight), none by default, and a resumed run
// refuses another weight than its checkpoint's.
func TestLearnOnlineNextWeight(t *testing.T) {
	data := smallApparel(t, 1500)
	var lls []float64
	for _, c := range []struct {
		extra  []string
		weight float64
	}{{[]string{"--next-weight", "0.02"}, 0.02}, {nil, 0}} {
		args := append([]string{"learn", "--data", data, "--mode", "online", "--d", "6", "--val", "100", "--test", "300", "--json", "--quiet"}, c.extra...)
		code, out, errs := runLearnCmd(t, args...)
		require.Equal(t, 0, code, errs)
		r := decodeMetrics(t, out)
		require.Equal(t, c.weight, r["next_weight"], "%v", c.extra)
		lls = append(lls, r["test_ll"].(float64))
	}
	require.NotEqual(t, lls[0], lls[1])
	ckpt := filepath.Join(t.TempDir(), "c.ckpt")
	code, _, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "6", "--val", "100", "--test", "300", "--checkpoint", ckpt, "--next-weight", "0.02", "--quiet")
	require.Equal(t, 0, code, errs)
	code, _, errs = runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "6", "--val", "100", "--test", "300", "--resume", ckpt, "--next-weight", "0", "--quiet")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--next-weight 0 conflicts with the checkpoint")
}

// TestSetOnlineGC checks that the online pass's collector setting applies
// only when the environment sets no GOGC, and that it is restored.
func TestSetOnlineGC(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test
	require.NoError(t, os.Unsetenv("GOGC"))
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	restore := setOnlineGC()
	require.Equal(t, onlineGCPercent, debug.SetGCPercent(onlineGCPercent), "during the pass")
	restore()
	require.Equal(t, 100, debug.SetGCPercent(100), "after the pass")

	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	restore = setOnlineGC()
	require.Equal(t, 200, debug.SetGCPercent(200), "GOGC from the environment is kept")
	restore()
	require.Equal(t, 200, debug.SetGCPercent(100))
}
