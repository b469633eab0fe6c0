package learn

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func workerAlive(w *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.alive
}

func workerParked(w *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.parked
}

// eventually polls cond for up to five seconds.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorkerHandsOverParksAndExits runs jobs through a worker in each of
// its states — polling right after a job, parked, ended after the idle
// limit — and checks that each job ran exactly once, in order, with its
// effects visible after wait.
func TestWorkerHandsOverParksAndExits(t *testing.T) {
	var w worker
	var n atomic.Int64
	var seen []int64 // written by jobs, read after wait: ordered by the handover
	run := func() {
		w.submit(func() { seen = append(seen, n.Add(1)) })
		w.wait()
	}
	for i := 0; i < 100; i++ {
		run() // back to back: the worker is polling
	}
	require.True(t, workerAlive(&w))
	eventually(t, func() bool { return workerParked(&w) }, "worker did not park")
	run() // wakes the parked worker
	eventually(t, func() bool { return !workerAlive(&w) }, "worker did not exit when idle")
	run() // starts a new one
	require.Len(t, seen, 102)
	for i, x := range seen {
		require.Equal(t, int64(i+1), x)
	}
}
