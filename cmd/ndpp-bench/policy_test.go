//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// outputFlag is one file output of one command, for the policy table.
type outputFlag struct {
	name string
	// args returns the command line writing the output to out (input
	// files from in).
	args func(in policyInputs, out string) []string
	// input returns a file of the command's inputs (or another output's
	// path, flagged in args) that out must not be.
	input func(in policyInputs) string
	// valid checks the bytes written.
	valid func(t *testing.T, b []byte)
	// std is false for outputs that refuse "-" (the checkpoint).
	std bool
	// regular is true for outputs that must be regular files (the
	// checkpoint, rewritten during the run and read back): a FIFO, a
	// socket or a device is refused before any work, as "-" is.
	regular bool
}

type policyInputs struct {
	data, model, other string
}

func prefix(p string) func(t *testing.T, b []byte) {
	return func(t *testing.T, b []byte) {
		t.Helper()
		require.True(t, bytes.HasPrefix(b, []byte(p)), "output starts with %q", b[:min(len(b), 40)])
	}
}

func outputFlags() []outputFlag {
	learnOff := func(in policyInputs) []string {
		return []string{"learn", "--data", in.data, "--mode", "offline", "--d", "3", "--epochs", "1", "--val", "20", "--test", "20", "--quiet"}
	}
	learnOn := func(in policyInputs) []string {
		return []string{"learn", "--data", in.data, "--mode", "online", "--d", "3", "--val", "20", "--test", "20", "--quiet"}
	}
	data := func(in policyInputs) string { return in.data }
	model := func(in policyInputs) string { return in.model }
	other := func(in policyInputs) string { return in.other }
	return []outputFlag{
		{name: "learn --out", args: func(in policyInputs, out string) []string { return append(learnOff(in), "--out", out) },
			input: data, valid: prefix("PK\x03\x04"), std: true},
		{name: "learn --trace", args: func(in policyInputs, out string) []string { return append(learnOff(in), "--trace", out) },
			input: data, valid: prefix("mode,seconds,baskets,nll_eps\n"), std: true},
		{name: "learn --checkpoint", args: func(in policyInputs, out string) []string { return append(learnOn(in), "--checkpoint", out) },
			input: data, valid: func(t *testing.T, b []byte) { require.NotEmpty(t, b) }, regular: true},
		{name: "infer --trajectory", args: func(in policyInputs, out string) []string {
			return []string{"infer", "--model", in.model, "--k", "3", "--algos", "online-lss", "--every", "5", "--quiet", "--trajectory", out}
		}, input: model, valid: prefix("algo,items,log_value"), std: true},
		{name: "sample --out", args: func(in policyInputs, out string) []string {
			return []string{"sample", "--model", in.model, "--count", "20", "--quiet", "--out", out}
		}, input: model, valid: func(t *testing.T, b []byte) { require.Equal(t, 20, bytes.Count(b, []byte("\n"))) }, std: true},
		{name: "baskets --out", args: func(in policyInputs, out string) []string {
			// No input file: the two-outputs case is items' (below).
			return []string{"baskets", "--synthetic", "--n", "50", "--count", "30", "--out", out}
		}, valid: func(t *testing.T, b []byte) { require.Equal(t, 30, bytes.Count(b, []byte("\n"))) }, std: true},
		{name: "items --out", args: func(in policyInputs, out string) []string {
			return []string{"items", "--synthetic", "--n", "40", "--d", "2", "--quiet", "--kernel-out", in.other, "--out", out}
		}, input: other, valid: prefix("\x93NUMPY"), std: true},
		{name: "items --kernel-out", args: func(in policyInputs, out string) []string {
			return []string{"items", "--synthetic", "--n", "40", "--d", "2", "--quiet", "--out", in.other, "--kernel-out", out}
		}, input: other, valid: prefix("PK\x03\x04"), std: true},
	}
}

// policySetup writes the inputs of the table's commands in a new
// directory.
func policySetup(t *testing.T) policyInputs {
	t.Helper()
	dir := t.TempDir()
	model := filepath.Join(dir, "m.npz")
	require.NoError(t, os.WriteFile(model, mustRead(t, smallModel), 0o644))
	return policyInputs{data: smallApparel(t, 300), model: model, other: filepath.Join(dir, "other.bin")}
}

// TestEveryOutputFlagFollowsThePolicy runs every file output of every
// command: named as one of the command's inputs (directly and through a
// symbolic link) it is refused before any work; a symbolic link given as
// the output keeps being a link and its target gets the content; a FIFO
// and a device are written through and stay what they are, or, for an
// output that must be a regular file, are refused before any work, as is
// a socket; "-" writes standard output (or is refused where the output
// cannot stream).
func TestEveryOutputFlagFollowsThePolicy(t *testing.T) {
	for _, c := range outputFlags() {
		t.Run(c.name, func(t *testing.T) {
			in := policySetup(t)
			if c.input != nil {
				target := c.input(in)
				if _, err := os.Stat(target); err != nil {
					require.NoError(t, os.WriteFile(target, []byte("keep me\n"), 0o644))
				}
				before := mustRead(t, target)
				link := filepath.Join(t.TempDir(), "link")
				require.NoError(t, os.Symlink(target, link))
				for _, out := range []string{target, link} {
					code, _, errs := runCmd(t, "", c.args(in, out)...)
					require.Equal(t, 2, code, errs)
					require.Regexp(t, "input file|same file", errs)
					require.Equal(t, before, mustRead(t, target), "%s was written", target)
				}
				require.NoError(t, os.Remove(link))
				if target == in.other {
					require.NoError(t, os.Remove(target))
				}
			}

			// A symbolic link: kept, its target replaced.
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "models"), 0o755))
			realFile := filepath.Join(dir, "models", "realFile")
			require.NoError(t, os.WriteFile(realFile, []byte("old"), 0o640))
			link := filepath.Join(dir, "current")
			require.NoError(t, os.Symlink("models/realFile", link))
			old, err := os.Stat(realFile)
			require.NoError(t, err)
			code, _, errs := runCmd(t, "", c.args(in, link)...)
			require.Equal(t, 0, code, errs)
			got, err := os.Readlink(link)
			require.NoError(t, err, "the link was replaced")
			require.Equal(t, "models/realFile", got)
			c.valid(t, mustRead(t, realFile))
			st, err := os.Stat(realFile)
			require.NoError(t, err)
			require.Equal(t, fs.FileMode(0o640), st.Mode().Perm())
			require.False(t, os.SameFile(old, st), "the target was written in place, not replaced")
			require.Equal(t, []string{"realFile"}, dirNames(t, filepath.Join(dir, "models")), "a temporary file is left")

			if c.regular {
				// A FIFO (a write would wait for a reader), a socket and
				// a device: refused before any work, left as they are.
				fifo, _ := ndpptest.FIFO(t)
				specials := map[string]string{"named pipe (FIFO)": fifo, "socket": ndpptest.Socket(t)}
				if os.Geteuid() == 0 {
					specials["device"] = ndpptest.NullDevice(t)
				}
				for kind, path := range specials {
					code, _, errs = runCmd(t, "", c.args(in, path)...)
					require.Equal(t, 2, code, errs)
					require.Contains(t, errs, " "+path+" is a "+kind+": ", errs)
					require.Contains(t, errs, "give a file", errs)
				}
				ndpptest.ReleaseFIFO(fifo)
				requireType(t, fifo, fs.ModeNamedPipe)
			} else {
				// A FIFO: written through, read by a goroutine.
				fifo, read := ndpptest.FIFO(t)
				code, _, errs = runCmd(t, "", c.args(in, fifo)...)
				require.Equal(t, 0, code, errs)
				c.valid(t, <-read)
				requireType(t, fifo, fs.ModeNamedPipe)
			}

			if os.Geteuid() == 0 && !c.regular {
				// A private device node with /dev/null's numbers.
				null := ndpptest.NullDevice(t)
				code, _, errs = runCmd(t, "", c.args(in, null)...)
				require.Equal(t, 0, code, errs)
				requireType(t, null, fs.ModeDevice|fs.ModeCharDevice)
			}

			// "-": standard output, or a usage error.
			code, out, errs := runCmd(t, "", c.args(in, "-")...)
			_, err = os.Lstat("-")
			require.True(t, os.IsNotExist(err), "a file named - was made")
			if !c.std {
				require.Equal(t, 2, code, errs)
				require.Contains(t, errs, "cannot be standard output (-)")
				return
			}
			require.Equal(t, 0, code, errs)
			c.valid(t, []byte(out))
		})
	}
}

func requireType(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, want, st.Mode().Type(), "%s changed type", path)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestStdinAndStdoutFlags: "-" reads standard input for every input that
// can stream (one flag at a time), a usage error names the reason for
// those that cannot, and a command whose output takes standard output
// prints its report on standard error.
func TestStdinAndStdoutFlags(t *testing.T) {
	in := policySetup(t)
	lines := strings.SplitAfter(string(mustRead(t, in.data)), "\n")
	head := strings.Join(lines[:120], "")
	const baskets = "0 1\n2 3 4\n1 5\n"

	// eval --test - (it used to panic) and --train - read stdin as a file.
	testFile := filepath.Join(t.TempDir(), "test.txt")
	require.NoError(t, os.WriteFile(testFile, []byte(baskets), 0o644))
	evalJSON := func(stdin string, args ...string) map[string]any {
		t.Helper()
		code, out, errs := runCmd(t, stdin, append([]string{"eval", "--model", in.model, "--json", "--quiet"}, args...)...)
		require.Equal(t, 0, code, errs)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		delete(m, "seconds")
		return m
	}
	want := evalJSON("", "--test", testFile, "--train", testFile)
	require.Equal(t, want, evalJSON(baskets, "--test", "-", "--train", testFile))
	require.Equal(t, want, evalJSON(baskets, "--test", testFile, "--train", "-"))
	code, _, errs := runCmd(t, baskets, "eval", "--model", in.model, "--test", "-", "--train", "-", "--quiet")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "--test and --train both name standard input")

	// learn --data - in both modes gives the model of the file; with
	// --out - the model goes to stdout and the report to stderr.
	dir := t.TempDir()
	file := filepath.Join(dir, "data.txt")
	require.NoError(t, os.WriteFile(file, []byte(head), 0o644))
	for _, mode := range []string{"offline", "online"} {
		args := []string{"learn", "--mode", mode, "--d", "3", "--val", "10", "--test", "10", "--quiet"}
		if mode == "offline" {
			args = append(args, "--epochs", "1")
		}
		fromFile := filepath.Join(dir, mode+".npz")
		code, report, errs := runCmd(t, "", append(args, "--data", file, "--out", fromFile)...)
		require.Equal(t, 0, code, errs)
		require.Contains(t, report, "log-likelihood")
		code, out, errs := runCmd(t, head, append(args, "--data", "-", "--out", "-")...)
		require.Equal(t, 0, code, errs)
		require.Equal(t, string(mustRead(t, fromFile)), out, "%s: the model on stdout", mode)
		require.Contains(t, errs, "log-likelihood", "%s: the report on stderr", mode)
	}
	// learn --resume - reads the checkpoint from stdin.
	ck := filepath.Join(dir, "ck.bin")
	online := []string{"learn", "--data", file, "--mode", "online", "--d", "3", "--val", "10", "--test", "10", "--quiet"}
	code, _, errs = runCmd(t, "", append(online, "--checkpoint", ck)...)
	require.Equal(t, 0, code, errs)
	code, fromFile, errs := runCmd(t, "", append(online, "--resume", ck)...)
	require.Equal(t, 0, code, errs)
	code, fromStdin, errs := runCmd(t, string(mustRead(t, ck)), append(online, "--resume", "-")...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, stripTiming(fromFile), stripTiming(fromStdin))

	// infer --trajectory -: the trajectory on stdout, the results on stderr.
	code, out, errs := runCmd(t, "", "infer", "--model", in.model, "--k", "3", "--algos", "online-lss", "--quiet", "--trajectory", "-")
	require.Equal(t, 0, code, errs)
	require.True(t, strings.HasPrefix(out, "algo,items,log_value"), out)
	require.Contains(t, errs, "online-lss")
	require.NotContains(t, out, "items/s")

	// Two outputs on stdout, and the flags that cannot stream.
	refused := []struct {
		args []string
		msg  string
	}{
		{[]string{"items", "--synthetic", "--n", "10", "--out", "-", "--kernel-out", "-"}, "--out and --kernel-out both name standard output"},
		{[]string{"learn", "--data", file, "--out", "-", "--trace", "-"}, "--out and --trace both name standard output"},
		{[]string{"learn", "--data", "-", "--mode", "online", "--resume", "-"}, "--data and --resume both name standard input"},
		{[]string{"learn", "--data", file, "--mode", "online", "--checkpoint", "-"}, "--checkpoint cannot be standard output (-)"},
		{[]string{"score", "--model", "-"}, "--model cannot be standard input (-): a model file"},
		{[]string{"eval", "--model", "-", "--test", file}, "--model cannot be standard input (-)"},
		{[]string{"sample", "--model", "-"}, "--model cannot be standard input (-)"},
		{[]string{"serve", "--model", "-"}, "--model cannot be standard input (-)"},
		{[]string{"infer", "--model", "-"}, "--model cannot be standard input (-)"},
		{[]string{"infer", "--items", "-", "--kernel", "-"}, "--kernel cannot be standard input (-)"},
		{[]string{"demo", "--out", "-"}, "--out cannot be standard input or output (-): it names a directory"},
		{[]string{"figures", "--in", "-"}, "--in cannot be standard input or output (-): it names a directory"},
	}
	for _, c := range refused {
		code, out, errs := runCmd(t, "", c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.msg, "%v", c.args)
		require.Empty(t, out)
	}
	_, err := os.Lstat("-")
	require.True(t, os.IsNotExist(err), "a file named - was made")
}

// stripTiming drops the seconds and rates of a metrics table.
func stripTiming(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "seconds") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
