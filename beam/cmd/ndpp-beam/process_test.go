//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/stretchr/testify/require"
)

// setProcessFlags sets Beam's environment and endpoint flags for a test
// and restores them after it.
func setProcessFlags(t *testing.T, envType, endpoint, config string) {
	t.Helper()
	old := [3]string{*jobopts.EnvironmentType, *jobopts.Endpoint, *jobopts.EnvironmentConfig}
	t.Cleanup(func() {
		*jobopts.EnvironmentType, *jobopts.Endpoint, *jobopts.EnvironmentConfig = old[0], old[1], old[2]
	})
	*jobopts.EnvironmentType, *jobopts.Endpoint, *jobopts.EnvironmentConfig = envType, endpoint, config
}

// TestPrepareProcessEnv: for a PROCESS environment of a job server on this
// machine, the relative paths of beam/README.md's recipe are taken from
// the working directory, a status file is added, and a command or boot
// program that is not an executable file is a usage error before the job;
// other environments and remote job servers are left as they are.
func TestPrepareProcessEnv(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "beam", "scripts"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "beam", "scripts", "process-boot"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "boot"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "plain"), []byte("x"), 0o644))
	recipe := `{"command":"beam/scripts/process-boot","env":{"NDPP_BEAM_BOOT":"bin/boot","OTHER":"rel/x"}}`

	setProcessFlags(t, "PROCESS", "localhost:8099", recipe)
	st, err := prepareProcessEnv()
	require.NoError(t, err)
	require.NotNil(t, st)
	defer st.close()
	var got struct {
		Command string            `json:"command"`
		Env     map[string]string `json:"env"`
	}
	require.NoError(t, json.Unmarshal([]byte(*jobopts.EnvironmentConfig), &got))
	require.Equal(t, filepath.Join(dir, "beam", "scripts", "process-boot"), got.Command)
	require.Equal(t, map[string]string{"NDPP_BEAM_BOOT": filepath.Join(dir, "bin", "boot"), "OTHER": "rel/x", statusEnvVar: st.path}, got.Env)

	for config, want := range map[string]string{
		`{"command":"beam/scripts/process-boot","env":{"NDPP_BEAM_BOOT":"bin/missing"}}`: "NDPP_BEAM_BOOT stat " + filepath.Join(dir, "bin", "missing") + ": no such file or directory",
		`{"command":"beam/scripts/process-boot","env":{"NDPP_BEAM_BOOT":"bin/plain"}}`:   "is not executable",
		`{"command":"bin","env":{}}`: "is not a regular file",
		`{"env":{}}`:                 `no "command"`,
		`not json`:                   "want a JSON object",
	} {
		setProcessFlags(t, "process", "127.0.0.1:8099", config)
		_, err := prepareProcessEnv()
		require.ErrorIs(t, err, errUsage, config)
		require.ErrorContains(t, err, "--environment_config: ", config)
		require.ErrorContains(t, err, want, config)
	}
	for _, c := range [][2]string{{"PROCESS", "jobs.example.com:8099"}, {"LOOPBACK", "localhost:8099"}, {"", ""}} {
		setProcessFlags(t, c[0], c[1], recipe)
		st, err := prepareProcessEnv()
		require.NoError(t, err)
		require.Nil(t, st)
		require.Equal(t, recipe, *jobopts.EnvironmentConfig)
	}
}

// TestProcessBootReportsAWorkerThatCannotStart: process-boot with a boot
// program that is not there exits 127 and writes why in NDPP_BEAM_STATUS.
func TestProcessBootReportsAWorkerThatCannotStart(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "process-boot"))
	require.NoError(t, err)
	status := filepath.Join(t.TempDir(), "status")
	cases := []struct{ boot, want string }{
		{"bin/boot", "is not an executable file"},
		{"", "NDPP_BEAM_BOOT is not set"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		_ = os.Remove(status)
		cmd := exec.Command(script, "--id='w1'", "--provision_endpoint=localhost:1")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NDPP_BEAM_BOOT="+c.boot, statusEnvVar+"="+status)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, string(out))
		require.Equal(t, 127, ee.ExitCode(), string(out))
		report, err := os.ReadFile(status)
		require.NoError(t, err)
		require.Contains(t, string(report), c.want)
		require.Equal(t, string(out), string(report), "the same line on standard error")
		if c.boot != "" {
			require.Contains(t, string(report), filepath.Join(dir, c.boot), "the path is named as the worker resolved it")
		}
	}
}

// TestWorkerStatusFailsTheJob: a job whose worker could not start (a
// report in the status file) fails with that report instead of waiting.
func TestWorkerStatusFailsTheJob(t *testing.T) {
	dir := t.TempDir()
	st := &workerStatus{dir: dir, path: filepath.Join(dir, "status")}
	wait := func(ctx context.Context, _ *beam.Pipeline) error { // a job that never ends by itself
		<-ctx.Done()
		return ctx.Err()
	}
	require.NoError(t, os.WriteFile(st.path, []byte("process-boot: NDPP_BEAM_BOOT=/x/boot is not an executable file\n"), 0o644))
	err := st.run(context.Background(), nil, wait)
	require.True(t, errors.As(err, new(errWorker)), "%v", err)
	require.EqualError(t, err, "a worker could not start, so the job cannot finish: process-boot: NDPP_BEAM_BOOT=/x/boot is not an executable file")

	// Without a report, the job's own result.
	require.NoError(t, os.Remove(st.path))
	require.NoError(t, st.run(context.Background(), nil, func(context.Context, *beam.Pipeline) error { return nil }))
	boom := errors.New("boom")
	require.ErrorIs(t, st.run(context.Background(), nil, func(context.Context, *beam.Pipeline) error { return boom }), boom)
}
