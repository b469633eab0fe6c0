package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// A PROCESS environment (--environment_type=PROCESS) has the job server
// run --environment_config's command for each SDK worker, on the job
// server's machine. When that machine is this one (an --endpoint on a
// loopback address), ndpp-beam prepares the environment before the job:
//
//   - the command, and the paths of beam/scripts/process-boot's variables
//     (NDPP_BEAM_BOOT, NDPP_BEAM_STAGING, NDPP_BEAM_WORKER_LOG), are taken
//     from ndpp-beam's working directory when relative, as a shell would
//     take them (the job server would resolve them from its own);
//   - the command and NDPP_BEAM_BOOT must be executable files: anything
//     else is a usage error naming --environment_config, since a worker
//     that cannot start leaves the job waiting for ever (the job server
//     logs "exit status 127" and goes on);
//   - NDPP_BEAM_STATUS names a file in which process-boot reports a worker
//     it could not start: ndpp-beam watches it while the job runs and
//     fails with that report.
//
// processEnv is the status file being watched (nil: none).
var processEnv *workerStatus

// processEnvVars are the variables of process-boot that name paths.
var processEnvVars = []string{"NDPP_BEAM_BOOT", "NDPP_BEAM_STAGING", "NDPP_BEAM_WORKER_LOG"}

// statusEnvVar names the file process-boot reports a worker's failure to
// start in.
const statusEnvVar = "NDPP_BEAM_STATUS"

// workerStatus is the file in which the workers' failures to start are
// reported, in a directory of its own.
type workerStatus struct {
	dir, path string
}

// loopback reports whether endpoint (HOST:PORT) names this machine.
func loopback(endpoint string) bool {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		host = endpoint
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// prepareProcessEnv rewrites --environment_config for a PROCESS
// environment of a job server on this machine (see above), and returns
// the status file to watch (nil when there is nothing to prepare).
func prepareProcessEnv() (*workerStatus, error) {
	if !strings.EqualFold(*jobopts.EnvironmentType, "process") || !loopback(*jobopts.Endpoint) {
		return nil, nil
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*jobopts.EnvironmentConfig), &cfg); err != nil {
		return nil, usageError("--environment_config: want a JSON object {\"command\": …, \"env\": {…}} for --environment_type=PROCESS: %v", err)
	}
	var command string
	if err := json.Unmarshal(cfg["command"], &command); err != nil || command == "" {
		return nil, usageError("--environment_config: no \"command\" string for --environment_type=PROCESS")
	}
	env := map[string]string{}
	if raw, ok := cfg["env"]; ok {
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, usageError("--environment_config: \"env\" must map names to strings: %v", err)
		}
	}
	abs := func(p string) (string, error) {
		if p == "" || filepath.IsAbs(p) {
			return p, nil
		}
		return filepath.Abs(p)
	}
	var err error
	if command, err = abs(command); err != nil {
		return nil, err
	}
	if err := executable(command); err != nil {
		return nil, usageError("--environment_config: the command %v: the job server could not start a worker", err)
	}
	for _, v := range processEnvVars {
		if env[v], err = abs(env[v]); err != nil {
			return nil, err
		}
		if env[v] == "" {
			delete(env, v)
		}
	}
	if boot, ok := env["NDPP_BEAM_BOOT"]; ok {
		if err := executable(boot); err != nil {
			return nil, usageError("--environment_config: NDPP_BEAM_BOOT %v: process-boot could not start a worker", err)
		}
	}
	dir, err := os.MkdirTemp("", "ndpp-beam-workers-")
	if err != nil {
		return nil, err
	}
	st := &workerStatus{dir: dir, path: filepath.Join(dir, "status")}
	env[statusEnvVar] = st.path
	cfg["command"], _ = json.Marshal(command)
	cfg["env"], _ = json.Marshal(env)
	out, _ := json.Marshal(cfg)
	*jobopts.EnvironmentConfig = string(out)
	return st, nil
}

// executable returns an error saying why path is not an executable
// regular file.
func executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// statusPoll is how often the status file is read while a job runs.
const statusPoll = 200 * time.Millisecond

// run runs a job with run, and fails it with the first report of a
// worker that could not start, as soon as one is in the status file.
func (st *workerStatus) run(ctx context.Context, p *beam.Pipeline, run func(context.Context, *beam.Pipeline) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(statusPoll)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if report := st.report(); report != "" {
					cancel(errWorker{report})
					return
				}
			}
		}
	}()
	err := run(ctx, p)
	if cause := context.Cause(ctx); errors.As(cause, new(errWorker)) {
		return cause
	}
	if err != nil {
		if report := st.report(); report != "" {
			return errWorker{report}
		}
	}
	return err
}

// report returns the first line of the status file ("" when it holds
// none).
func (st *workerStatus) report() string {
	b, err := os.ReadFile(st.path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// close removes the status file's directory.
func (st *workerStatus) close() { os.RemoveAll(st.dir) }

// errWorker is a worker that could not start, as process-boot reported it.
type errWorker struct{ report string }

func (e errWorker) Error() string {
	return "a worker could not start, so the job cannot finish: " + e.report
}

// runPipeline runs p with beamx.Run, watching the workers of a PROCESS
// environment prepared by initBeam. A job in a LOOPBACK environment (the
// in-process Prism runner's default) runs with $TMPDIR at a directory of
// its own, removed after the job: the Beam SDK leaves an empty
// beamloopbackworker-* file in the temporary directory at every such job.
func runPipeline(ctx context.Context, p *beam.Pipeline) error {
	if loopbackEnv() {
		restore, err := privateTempDir()
		if err != nil {
			return err
		}
		defer restore()
	}
	if processEnv == nil {
		return beamx.Run(ctx, p)
	}
	return processEnv.run(ctx, p, beamx.Run)
}

// loopbackEnv reports whether the job's SDK workers run in this process:
// --environment_type=LOOPBACK, or none with the in-process Prism runner
// (which then takes LOOPBACK).
func loopbackEnv() bool {
	return jobopts.IsLoopback() || (inProcess() && *jobopts.EnvironmentType == "")
}

// privateTempDir points $TMPDIR at a new directory under the temporary
// directory and returns the function that restores $TMPDIR and removes
// the directory with whatever was left in it.
func privateTempDir() (restore func(), err error) {
	dir, err := os.MkdirTemp("", "ndpp-beam-tmp-")
	if err != nil {
		return nil, err
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", dir); err != nil {
		os.Remove(dir)
		return nil, err
	}
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
	}, nil
}
