// Command ndpp-bench is the command-line front of ndpp: demo, learn, eval,
// infer, items, score, serve, sample, baskets, backends and figures.
//
// Usage:
//
//	ndpp-bench <command> [flags]
//
// The global flags --backend gonum|openblas|auto, --threads N, --json,
// --quiet and --max-memory SIZE are accepted by the commands they apply to
// (a command's --help lists its own; another one is a usage error), and
// every command takes --help with an example. `ndpp-bench version` (or
// --version) prints the build's version. Usage errors print one line and
// exit with status 2; other failures exit with status 1.
// SIGINT or SIGTERM stops a command that watches its context (infer,
// sample, learn, eval, demo, score, items, baskets, figures) at its next
// check, with exit status 130; a second signal ends the process at once.
// backends and version keep the signals' default effect, and serve
// handles its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/cmdenv"
	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// command is one subcommand. run parses its own flags from args; globals
// are the global flags it honours (newFlagSet registers only those).
type command struct {
	name    string
	summary string
	globals globalFlags
	run     func(e *env, args []string) error
	// interruptible: run watches e.ctx, which SIGINT and SIGTERM cancel.
	interruptible bool
}

// globalFlags is a set of global flags.
type globalFlags uint8

const (
	gBackend globalFlags = 1 << iota // --backend: the command computes with BLAS
	gThreads                         // --threads: it runs workers
	gJSON                            // --json: it has JSON output
	gQuiet                           // --quiet: it writes progress or summaries to stderr
	gMaxMem                          // --max-memory: it checks allocations against the budget
)

// globalNames are the flag names of the global flags, in usage order.
var globalNames = []struct {
	flag globalFlags
	name string
}{{gBackend, "backend"}, {gThreads, "threads"}, {gJSON, "json"}, {gQuiet, "quiet"}, {gMaxMem, "max-memory"}}

// names lists the flags of set as "--a, --b" ("none" when empty).
func (set globalFlags) names() string {
	var out []string
	for _, g := range globalNames {
		if set&g.flag != 0 {
			out = append(out, "--"+g.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("ndpp-bench: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// env carries a command's standard streams (tests substitute buffers).
type env struct {
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
	// stderrTTY reports whether stderr is a terminal (progress bars).
	stderrTTY bool
	// signals makes run stop interruptible commands on SIGINT and SIGTERM
	// (through ctx); tests leave it off.
	signals bool
	// ctx is the command's context, done when it should stop (nil:
	// never).
	ctx context.Context
}

// context returns the command's context (context.Background() when none
// is set).
func (e *env) context() context.Context {
	if e.ctx == nil {
		return context.Background()
	}
	return e.ctx
}

// usageError is a mistake in the command line: exit status 2, one line.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// globals are the values of the global flags (those a command does not
// honour keep their zero values).
type globals struct {
	backend string
	threads int
	json    bool
	quiet   bool
	maxMem  string
	// budget is the memory budget (--max-memory, else $NDPP_MAX_MEMORY,
	// else the machine's), set by apply and passed to library calls.
	budget memlimit.Budget
}

// register adds the global flags of set to fs.
func (g *globals) register(fs *flag.FlagSet, set globalFlags) {
	if set&gBackend != 0 {
		fs.StringVar(&g.backend, "backend", "", "BLAS backend: gonum, openblas or auto (default: $"+cmdenv.BLASVar+", else auto when OpenBLAS is compiled in)")
	}
	if set&gThreads != 0 {
		fs.IntVar(&g.threads, "threads", 0, "worker goroutines (default: number of CPUs); OpenBLAS itself runs one thread per call, since ndpp parallelises across goroutines")
	}
	if set&gJSON != 0 {
		fs.BoolVar(&g.json, "json", false, "print JSON instead of tables")
	}
	if set&gQuiet != 0 {
		fs.BoolVar(&g.quiet, "quiet", false, "no progress or summary lines on stderr")
	}
	if set&gMaxMem != 0 {
		fs.StringVar(&g.maxMem, "max-memory", "", "memory budget that large allocations are checked against before they are made, e.g. 8G (default: $"+cmdenv.MemoryVar+", else 3/4 of the machine's or the process's memory limit)")
	}
}

// apply selects the backend and thread count.
func (g *globals) apply() error {
	if g.backend != "" {
		if err := blas.Use(g.backend); err != nil {
			return usageError{err.Error()}
		}
	} else if name := cmdenv.Backend(); name != "" {
		if err := blas.Use(name); err != nil {
			return usageError{cmdenv.BackendError(name, err).Error()}
		}
	}
	if g.threads < 0 {
		return usagef("--threads must be ≥ 0")
	}
	if g.threads == 0 {
		g.threads = runtime.NumCPU()
	}
	blas.SetThreads(1) // ndpp parallelises across goroutines itself
	if g.maxMem != "" {
		b, err := memlimit.Parse(g.maxMem)
		if err != nil {
			return usagef("--max-memory: %v", err)
		}
		g.budget = memlimit.Budget{Bytes: b, Source: "--max-memory"}
		return nil
	}
	b, err := cmdenv.Budget("ndpp-bench")
	if err != nil {
		return usageError{err.Error()}
	}
	g.budget = b
	return nil
}

// newFlagSet returns a FlagSet for a command with the global flags it
// honours (command.globals) and a usage text made of the summary, an
// example and the flag list.
func newFlagSet(e *env, name, summary, example string, g *globals) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	set := gBackend | gThreads | gJSON | gQuiet | gMaxMem
	if c, ok := commands[name]; ok {
		set = c.globals
	}
	g.register(fs, set)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "ndpp-bench %s: %s\n\nExample:\n  %s\n\nFlags:\n", name, summary, example)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; --help prints the command's usage and returns
// errHelp (exit 0), any other problem is a one-line usageError (the flag
// package's own printing is silenced while parsing).
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return errHelp
	}
	if err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			if c, known := commands[fs.Name()]; known {
				for _, g := range globalNames {
					if g.name == name {
						return usagef("--%s does not apply to %s (the global flags it takes: %s)", name, fs.Name(), c.globals.names())
					}
				}
			}
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

var errHelp = errors.New("help")

func main() {
	e := &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, stderrTTY: isTerminal(os.Stderr), signals: true}
	os.Exit(run(e, os.Args[1:]))
}

// run executes a command line and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "ndpp-bench: unknown command %q (commands: %s)\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	if e.signals && c.interruptible {
		ctx, stop := interruptContext(e.context())
		defer stop()
		e.ctx = ctx
	}
	err := c.run(e, args[1:])
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "ndpp-bench %s: %s (see ndpp-bench %s --help)\n", c.name, firstLine(ue.msg), c.name)
		return 2
	case e.ctx != nil && e.ctx.Err() != nil && errors.Is(err, e.ctx.Err()):
		fmt.Fprintf(e.stderr, "ndpp-bench %s: interrupted: %s\n", c.name, firstLine(err.Error()))
		return 130
	default:
		fmt.Fprintf(e.stderr, "ndpp-bench %s: %s\n", c.name, firstLine(err.Error()))
		return 1
	}
}

// interruptContext returns a context of parent that is cancelled on the
// first SIGINT or SIGTERM; the signals then have their default effect
// again, so a second one ends the process (e.g. during a read that blocks).
func interruptContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "ndpp-bench: nonsymmetric DPP inference and learning")
	fmt.Fprintln(w, "\nUsage: ndpp-bench <command> [flags]   (ndpp-bench <command> --help for details; ndpp-bench --version)")
	fmt.Fprintln(w, "\nCommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nBLAS backends compiled in: %s\n", strings.Join(blas.Available(), ", "))
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
