//go:build unix

package main

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestInterruptContext: SIGINT cancels the context of interruptContext
// and does not end the process.
func TestInterruptContext(t *testing.T) {
	ctx, stop := interruptContext(context.Background())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not cancel the context")
	}
}
