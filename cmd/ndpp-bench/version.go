package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/ndpp-go/ndpp/blas"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the build's version: module version, VCS revision, Go version and BLAS backends (also ndpp-bench --version)",
		run:     runVersion,
	})
}

func runVersion(e *env, args []string) error {
	var g globals
	fs := newFlagSet(e, "version", "print the module version (a tagged release, or (devel) for a build from a source tree), the VCS revision and whether the tree was modified when the build recorded them, the Go version and the BLAS backends compiled in", "ndpp-bench version", &g)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	writeVersion(e.stdout)
	return nil
}

// writeVersion writes the build's version from its build information.
func writeVersion(w io.Writer) {
	version, revision, modified := "(devel)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	fmt.Fprintf(w, "ndpp-bench %s\n", version)
	if revision != "" {
		if modified == "true" {
			revision += " (modified)"
		}
		fmt.Fprintf(w, "revision %s\n", revision)
	}
	fmt.Fprintf(w, "go %s %s/%s\n", strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "BLAS backends compiled in: %s\n", strings.Join(blas.Available(), ", "))
}
