package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBadBLASEnvIsOneUsageError runs a command in a child process with
// NDPP_BLAS=bogus (the default of --backend): one line naming the
// bad value, no word of a fallback the command does not take, exit 2.
func TestBadBLASEnvIsOneUsageError(t *testing.T) {
	if os.Getenv("NDPP_BENCH_CHILD") == "1" {
		os.Exit(run(&env{stdout: os.Stdout, stderr: os.Stderr, stdin: strings.NewReader("")}, []string{"backends"}))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadBLASEnvIsOneUsageError$")
	cmd.Env = append(os.Environ(), "NDPP_BENCH_CHILD=1", "NDPP_BLAS=bogus")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; stderr %q", err, stderr.String())
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, `NDPP_BLAS="bogus"`) || !strings.Contains(msg, "want gonum, openblas or auto") || strings.Contains(msg, "using") {
		t.Errorf("stderr %q: want one line naming the bad value and the choices, no fallback", msg)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
