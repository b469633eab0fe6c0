package main

import (
	"path/filepath"
	"testing"
)

// TestLearnDefaultsBeatBaselines runs `learn --json` with default settings
// (d = 30) on the two Amazon registry files of testdata/, seeds 1 and 2, and
// asserts the targets the defaults are held to on real data (learn/RESULTS.md
// "Against the targets"): the offline learner's test log-likelihood above
// the independent-items model's and its paper MPR at least 1 point above
// popularity's; one online pass with a test log-likelihood within 5% of the
// offline learner's and above the independent-items model's, and an MPR
// above popularity's. The measured margins (RESULTS) are several times these
// bars, so rounding differences between builds cannot flip them. Under
// -short and the race detector only the apparel file is learned.
func TestLearnDefaultsBeatBaselines(t *testing.T) {
	files := []string{"1_100_100_100_apparel_regs.csv", "1_100_100_100_apparel-diaper-feeding_regs.csv"}
	if testing.Short() || raceEnabled {
		files = files[:1]
	}
	for _, file := range files {
		data := filepath.Join("..", "..", "testdata", file)
		for _, seed := range []string{"1", "2"} {
			get := func(mode string) map[string]any {
				code, out, errs := runCmd(t, "", "learn", "--data", data, "--mode", mode, "--seed", seed, "--json", "--quiet")
				if code != 0 {
					t.Fatalf("%s %s seed %s: exit %d: %s", file, mode, seed, code, errs)
				}
				return decodeMetrics(t, out)
			}
			off, on := get("offline"), get("online")
			num := func(r map[string]any, k string) float64 {
				v, ok := r[k].(float64)
				if !ok {
					t.Fatalf("%s seed %s: %s = %v, want a number", file, seed, k, r[k])
				}
				return v
			}
			ind, pop := num(off, "baseline_independent_ll_eps"), num(off, "baseline_popularity_mpr")
			if got := num(on, "baseline_independent_ll_eps"); got != ind {
				t.Errorf("%s seed %s: the online run's independent-items LL %v, the offline run's %v (same split)", file, seed, got, ind)
			}
			offLL, onLL := num(off, "test_ll_eps"), num(on, "test_ll_eps")
			offMPR, onMPR := num(off, "mpr"), num(on, "mpr")
			t.Logf("%s seed %s: LL offline %.3f online %.3f independent %.3f; MPR offline %.2f online %.2f popularity %.2f",
				file, seed, offLL, onLL, ind, offMPR, onMPR, pop)
			if offLL <= ind {
				t.Errorf("%s seed %s: offline test LL %.4f not above the independent-items model's %.4f", file, seed, offLL, ind)
			}
			if offMPR < pop+1 {
				t.Errorf("%s seed %s: offline MPR %.2f not 1 point above popularity's %.2f", file, seed, offMPR, pop)
			}
			if gap := (offLL - onLL) / -offLL; gap > 0.05 {
				t.Errorf("%s seed %s: online test LL %.4f is %.1f%% below the offline learner's %.4f (bar 5%%)", file, seed, onLL, 100*gap, offLL)
			}
			if onLL <= ind {
				t.Errorf("%s seed %s: online test LL %.4f not above the independent-items model's %.4f", file, seed, onLL, ind)
			}
			if onMPR <= pop {
				t.Errorf("%s seed %s: online MPR %.2f not above popularity's %.2f", file, seed, onMPR, pop)
			}
		}
	}
}
