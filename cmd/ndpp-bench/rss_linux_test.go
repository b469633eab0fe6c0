//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// vmHWM reads the process's peak resident set size from /proc/self/status
// (VmHWM, in KiB), the figure getrusage's ru_maxrss reports on Linux.
func vmHWM(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kib * 1024
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// TestLearnPeakRSS checks that learn reports the process's peak resident
// memory in bytes on Linux: at least the kernel's high-water mark before
// the run (the command runs in this process) and at most the machine's
// physical memory, which checks the KiB-to-bytes conversion both ways; and
// a line of the text report. (ru_maxrss may exceed the high-water mark
// after the run: it also keeps the peak of the image this process was
// executed from.)
func TestLearnPeakRSS(t *testing.T) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	ram := int64(si.Totalram) * int64(si.Unit)
	data := smallApparel(t, 1500)
	for _, mode := range []string{"offline", "online"} {
		before := vmHWM(t)
		code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", mode, "--d", "5", "--val", "100", "--test", "300",
			"--epochs", "2", "--json", "--quiet")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errs)
		}
		v, ok := decodeMetrics(t, out)["peak_rss_bytes"].(float64)
		if !ok || v <= 0 {
			t.Fatalf("%s: peak_rss_bytes = %v, want positive", mode, v)
		}
		if got := int64(v); got < before || got > ram {
			t.Errorf("%s: peak_rss_bytes = %d, want between the high-water mark %d before the run and the physical memory %d", mode, got, before, ram)
		}
	}
	code, out, errs := runLearnCmd(t, "learn", "--data", data, "--mode", "online", "--d", "5", "--val", "100", "--test", "300", "--quiet")
	if code != 0 || !strings.Contains(out, "peak resident memory (training)") || !strings.Contains(out, " MiB") {
		t.Errorf("text report (exit %d, %s):\n%s", code, errs, out)
	}
}
