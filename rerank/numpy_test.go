//go:build linux

package rerank

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ndpp-go/ndpp/ndpp"
)

var numpyPython = flag.String("numpy.python", "", "Python with NumPy for TestNumpyGreedy (e.g. /usr/bin/python3); the test is skipped without it")

// TestNumpyGreedy compares the greedy with a NumPy implementation of Chen et
// al.'s fast greedy computing the kernel rows on the fly from the low-rank
// factors (bench/numpy_greedy.py) on the same requests — N = 500 candidates
// of a catalogue of 10⁴, k = 10, d = 30, quality scores — in one run: the
// chosen sets must agree, and it logs both latency distributions and the
// ratio of the medians. Run it with make bench-rerank-numpy.
func TestNumpyGreedy(t *testing.T) {
	if *numpyPython == "" {
		t.Skip("no -numpy.python")
	}
	const n, d, nc, k, nreq, reps = 10000, 30, 500, 10, 50, 40
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.05})
	rng := rand.New(rand.NewPCG(500, 10))
	reqs := make([]Request, nreq)
	for i := range reqs {
		reqs[i] = benchRequest(rng, n, nc, k)
	}
	dir := t.TempDir()
	type jreq struct {
		Candidates []int     `json:"candidates"`
		Quality    []float64 `json:"quality"`
		K          int       `json:"k"`
	}
	inst := struct {
		N          int     `json:"n"`
		D          int     `json:"d"`
		Shared     bool    `json:"shared"`
		ZeroFactor float64 `json:"zero_factor"`
		Reps       int     `json:"reps"`
		Requests   []jreq  `json:"requests"`
	}{N: n, D: d, Shared: m.Shared(), ZeroFactor: ZeroFactor, Reps: reps}
	for _, r := range reqs {
		inst.Requests = append(inst.Requests, jreq{r.Candidates, r.Quality, r.K})
	}
	js, err := json.Marshal(inst)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inst.json"), js, 0o644))
	v, b, bc, _ := m.Rows()
	diag := make([]float64, n)
	for i := range diag {
		diag[i] = m.ItemDiag(i)
	}
	files := map[string][]float64{"v.bin": v, "bc.bin": bc, "diag.bin": diag}
	if !m.Shared() {
		files["b.bin"] = b
	}
	for name, x := range files {
		buf := make([]byte, 8*len(x))
		for i, f := range x {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(f))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
	}

	// NumPy, with OpenBLAS's processor overrides left out of its
	// environment alone (they slow a current NumPy) and one thread.
	cmd := exec.Command(*numpyPython, filepath.Join("bench", "numpy_greedy.py"), dir)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OPENBLAS_CORETYPE=") && !strings.HasPrefix(e, "OPENBLAS_L2_SIZE=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var np struct {
		Chosen     [][]int         `json:"chosen"`
		Wall       [2]float64      `json:"wall_us"`
		CPU        [2]float64      `json:"cpu_us"`
		Version    string          `json:"numpy"`
		Threadpool json.RawMessage `json:"threadpool"`
	}
	require.NoError(t, json.Unmarshal(out, &np))

	var ws Workspace
	for i, r := range reqs {
		res, err := ws.Rerank(context.Background(), m, r)
		require.NoError(t, err)
		require.Equal(t, np.Chosen[i], res.Items, "request %d: NumPy and Go chose different items", i)
	}
	// Go, the same requests in the same order, one workspace, on one
	// thread (for its CPU clock).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]float64, 0, nreq*reps)
	cpu := make([]float64, 0, nreq*reps)
	for range reps {
		for _, r := range reqs {
			c0, t0 := threadCPU(), time.Now()
			if _, err := ws.Rerank(context.Background(), m, r); err != nil {
				t.Fatal(err)
			}
			el, c1 := time.Since(t0), threadCPU()
			wall = append(wall, float64(el.Nanoseconds())/1e3)
			cpu = append(cpu, float64(c1-c0)/1e3)
		}
	}
	gw, gc := pcts(wall), pcts(cpu)
	t.Logf("NumPy %s (threadpool %s)", np.Version, np.Threadpool)
	t.Logf("N=%d k=%d d=%d, %d requests × %d, p50/p99 µs:", nc, k, d, nreq, reps)
	t.Logf("  wall: NumPy %.1f / %.1f, Go %.1f / %.1f: ratio of p50s %.2f (Go p99/p50 %.2f)", np.Wall[0], np.Wall[1], gw[0], gw[1], np.Wall[0]/gw[0], gw[1]/gw[0])
	t.Logf("  CPU:  NumPy %.1f / %.1f, Go %.1f / %.1f: ratio of p50s %.2f (Go p99/p50 %.2f)", np.CPU[0], np.CPU[1], gc[0], gc[1], np.CPU[0]/gc[0], gc[1]/gc[0])
}

// threadCPU returns the CPU time of the calling thread in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
