package learn

import (
	"runtime"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// OfflineMemory estimates the bytes TrainOffline holds with opts for a
// catalogue of n items (n = 0: the part that does not grow with the
// catalogue, known before the data is read): C's factor with its gradient
// and optimiser moments (d×d), the normaliser's 2d×2d matrices, the item
// vectors V and B with their gradients, moments and model copies, each
// worker's gradient sums (opts.Workers, default GOMAXPROCS) and a minibatch
// step's scratch for merging them, with a next-item term the items' rows it
// prepares each step, and with Average (or a strong rank run's, RankStrong)
// the averaged parameters. opts.D ≤ 0 is the default rank DefaultOfflineD.
// It returns -1 when the estimate overflows an int64; a memory budget
// (memlimit) refuses that. A distributed driver that sums one gradient per
// step (learn.FullBatch) counts as one worker.
func OfflineMemory(opts OfflineOptions, n int) int64 {
	w := opts.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	d := opts.D
	if d <= 0 {
		d = DefaultOfflineD
	}
	m := learnerMemory(d, n, w)
	o := opts
	o.rankStrong()
	o = o.withDefaults()
	if !o.FullBatch {
		// A minibatch step's sums hold a third n×d array and θ's n a
		// worker beyond learnerMemory's two, and the step's finish its
		// scratch: four rows of d for each item with basket pieces (at
		// most n) and a d×d product.
		m = memlimit.Sum(m, memlimit.Bytes(int64(w), memlimit.Sum(memlimit.Bytes(int64(n), int64(d)), int64(n)), 8),
			memlimit.Bytes(memlimit.Sum(memlimit.Bytes(int64(n), int64(4*d)), memlimit.Bytes(int64(d), int64(d))), 1, 8))
	}
	if o.NextWeight > 0 || o.RankStrong != nil {
		m = memlimit.Sum(m, nextPrepMemory(n, d))
	}
	if o.Average > 0 || (o.RankStrong != nil && o.RankStrong.Average > 0) { // the averaged parameters
		m = memlimit.Sum(m, memlimit.Bytes(int64(n), int64(2*d+1), 8), memlimit.Bytes(int64(d), int64(d), 8))
	}
	return m
}

// OnlineMemory estimates the bytes of the online learner (NewOnline,
// TrainOnline) with opts over n items as OfflineMemory does, with workers
// copies of the per-worker gradient sums (ndpp-bench counts one per
// thread). opts.D ≤ 0 is the default rank DefaultD.
func OnlineMemory(opts OnlineOptions, n, workers int) int64 {
	return learnerMemory(opts.D, n, workers)
}

// learnerMemory is the learners' estimate for rank d, n items and workers
// goroutines holding gradient sums (at least one).
func learnerMemory(d, n, workers int) int64 {
	if d <= 0 {
		d = DefaultD
	}
	dd, nn, w := int64(d), int64(n), int64(max(workers, 1))
	return memlimit.Sum(memlimit.Bytes(dd, dd, 8*6), memlimit.Bytes(2*dd, 2*dd, 8*6),
		memlimit.Bytes(nn, dd, 8*10), memlimit.Bytes(w, memlimit.Sum(memlimit.Bytes(nn, dd, 2), memlimit.Bytes(dd, dd)), 8))
}
