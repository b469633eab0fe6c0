package main

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar on stderr, shown only when stderr is a terminal
// and --quiet is not set. A nil *progress is valid and does nothing, so
// callers need no conditionals. The bar is drawn by
// github.com/schollz/progressbar (throttled, terminal-width aware).
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress returns a bar over total units (−1 for unknown), or nil.
func newProgress(e *env, g *globals, total int64, desc string) *progress {
	if !e.stderrTTY || g.quiet {
		return nil
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(e.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
	return &progress{bar: bar}
}

// Add advances the bar by n units.
func (p *progress) Add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// Set shows cur of max (max may grow as work is added).
func (p *progress) Set(cur, max int64) {
	if p != nil {
		if max != p.bar.GetMax64() {
			p.bar.ChangeMax64(max)
		}
		_ = p.bar.Set64(cur)
	}
}

// Finish completes and clears the bar.
func (p *progress) Finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}
