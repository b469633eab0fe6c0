package learn

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// worker runs one job at a time on a goroutine of its own with low handoff
// latency. Starting a goroutine per job, or waking a parked one, costs tens
// to hundreds of microseconds on virtual machines (the idle processor must
// be woken), as long as a whole refactorisation of the online learner; so
// between jobs the worker polls for the next one for up to workerSpin
// (yielding to other goroutines and threads at every poll), then parks, and exits after
// workerIdle without work (a dropped learner leaves no goroutine behind).
// The submitter likewise polls for the result. Jobs are handed over and
// completed through sequence numbers (sync/atomic), which order the job's
// memory effects before the submitter's next reads.
//
// A worker is used by one submitting goroutine; its zero value is ready.
type worker struct {
	req, fin atomic.Uint64 // jobs submitted, jobs finished
	job      func()
	// poll, when set, is called at every poll for a job (before the
	// worker's goroutine starts: it is not synchronised).
	poll func()

	mu     sync.Mutex // guards alive, parked and the wake handoff
	alive  bool
	parked bool
	wake   chan struct{}
}

// The worker's polling and idle limits.
const (
	workerSpin = 2 * time.Millisecond
	workerIdle = 100 * time.Millisecond
)

// submit hands f to the worker; the previous job must have finished (wait).
func (w *worker) submit(f func()) {
	w.job = f
	w.repost()
}

// repost hands the worker the job of the last submit once more, whether or
// not it has run the earlier hand-overs: it runs the job once per
// hand-over, in turn. For jobs that claim their work (so that a later
// hand-over may find it done already).
func (w *worker) repost() {
	w.req.Add(1)
	w.mu.Lock()
	switch {
	case !w.alive:
		if w.wake == nil {
			w.wake = make(chan struct{}, 1)
		}
		w.alive = true
		go w.loop()
	case w.parked:
		w.parked = false
		w.wake <- struct{}{}
	}
	w.mu.Unlock()
}

// idle reports whether the submitted jobs have finished (wait would not
// block).
func (w *worker) idle() bool { return w.fin.Load() == w.req.Load() }

// wait returns when the submitted jobs have finished.
func (w *worker) wait() {
	for w.fin.Load() != w.req.Load() {
		runtime.Gosched()
		osYield()
	}
}

func (w *worker) loop() {
	for {
		// Poll for a job.
		start := time.Now()
		for n := 0; w.req.Load() == w.fin.Load(); n++ {
			if n%64 == 63 && time.Since(start) > workerSpin {
				if !w.park() {
					return
				}
				start = time.Now()
			}
			if w.poll != nil {
				w.poll()
			}
			runtime.Gosched()
			osYield()
		}
		f := w.job
		f()
		w.fin.Add(1)
	}
}

// park blocks until a job is submitted (true) or workerIdle passes without
// one (false: the worker has ended).
func (w *worker) park() bool {
	w.mu.Lock()
	if w.req.Load() != w.fin.Load() {
		w.mu.Unlock()
		return true
	}
	w.parked = true
	w.mu.Unlock()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	select {
	case <-w.wake:
		return true
	case <-t.C:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.parked {
		// A submission raced with the timer: its wake-up is buffered.
		<-w.wake
		return true
	}
	w.parked = false
	w.alive = false
	return false
}
