package main

import (
	"errors"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// The reasons flags give for refusing "-" (outfile.File.Why).
const (
	whyModel      = "a model file (.npz, a zip archive) is read by seeking; give a file"
	whyCheckpoint = "the checkpoint is rewritten during the run and read back by --resume; give a file"
	whyDir        = "it names a directory"
)

// modelFile is a model-file input flag (refuses "-", see whyModel).
func modelFile(flag, path string) outfile.File {
	return outfile.File{Flag: flag, Path: path, Why: whyModel}
}

// stdFile is a file flag that takes "-" (standard input for an input,
// standard output for an output).
func stdFile(flag, path string) outfile.File {
	return outfile.File{Flag: flag, Path: path, Stream: true}
}

// checkFiles validates a command's files before it does any work (see
// outfile.Check: outputs distinct from the inputs and from each other,
// writable; "-" where a flag takes it and once per stream). Its mistakes
// in the command line are usage errors (exit 2); an output that cannot
// be written is a plain error naming the flag and the path.
func checkFiles(inputs, outputs []outfile.File) error {
	err := outfile.Check(inputs, outputs)
	if errors.Is(err, outfile.ErrUsage) {
		return usageError{err.Error()}
	}
	return err
}

// refuseStd is the usage error of a flag naming a directory given "-".
func refuseStd(flag, path string) error {
	if path == outfile.Std {
		return usagef("%s cannot be standard input or output (-): %s", flag, whyDir)
	}
	return nil
}

// reportTo returns the environment a command prints its report (tables,
// JSON) with: e itself, or, when one of outputs is "-" and so takes
// standard output, e with the report sent to standard error.
func reportTo(e *env, outputs ...string) *env {
	for _, o := range outputs {
		if o == outfile.Std {
			r := *e
			r.stdout = e.stderr
			return &r
		}
	}
	return e
}

// loadModel reads a model file within the memory budget and refuses a
// model whose kernel overflows float64 (npz.LoadOptions.CheckScale); a
// refusal over the budget names the budget's source.
func loadModel(path string, budget memlimit.Budget) (*ndpp.Model, error) {
	m, err := npz.LoadOptions{MaxBytes: budget.Bytes, CheckScale: true}.Load(path)
	return m, budget.Rename(err)
}

// modelFileError classifies an error of loadModel for commands that treat
// a bad model file as a usage error (exit 2): a model beyond the memory
// budget or one that overflows is a runtime error (exit 1), as elsewhere.
func modelFileError(err error) error {
	var me *memlimit.Error
	if errors.As(err, &me) || errors.Is(err, ndpp.ErrOverflow) {
		return err
	}
	return usageError{err.Error()}
}
