package learn

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/f64"

	"github.com/ndpp-go/ndpp/internal/binfmt"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

var updateCheckpoints = flag.Bool("update-checkpoints", false, "rewrite testdata/online-v6-*.ckpt")

// checkpointFixtures are the committed checkpoints: a learner with opt on
// fixtureBaskets, saved after pos baskets. Snapshots are taken after
// baskets 11, 21, 31, … and their results take effect lag baskets later.
// With the lag equal to the period (10) a result is pending at every
// position (at 27: the result at 31); with lag 4 none is at 27 (the last
// took effect at 25, the next snapshot's takes effect at 35).
// The fixtures were written with the online defaults of their time, DiagLR
// 0.01 among them; the options name it, so that they keep their bytes.
var checkpointFixtures = []struct {
	file       string
	opt        OnlineOptions
	pos        int64
	swapAt     int64 // the pending result's position (0: none)
	nextResult int64 // the position where the next result takes effect
}{
	{"online-v6-pending-result.ckpt", OnlineOptions{D: 3, Seed: 1, DiagLR: 0.01, Schedule: Schedule{FactorEvery: 10}}, 27, 31, 31},
	{"online-v6-no-pending.ckpt", OnlineOptions{D: 3, Seed: 1, DiagLR: 0.01, Schedule: Schedule{FactorEvery: 10, Lag: 4}}, 27, 0, 35},
	{"online-v6-lowrank.ckpt", OnlineOptions{D: 3, Seed: 1, LowRank: true, DiagLR: 0.01, Schedule: Schedule{FactorEvery: 10}}, 27, 31, 31},
}

func fixtureBaskets() [][]int { return plantedBaskets(200, 60, 3) }

// learnerAt returns a learner run on the first pos baskets.
func learnerAt(t *testing.T, opt OnlineOptions, baskets [][]int, pos int64) *Online {
	t.Helper()
	o, err := NewOnline(opt)
	require.NoError(t, err)
	_, err = o.Run(context.Background(), sliceSource(baskets), OnlineRun{MaxBaskets: pos})
	require.NoError(t, err)
	return o
}

func saveBytes(t *testing.T, o *Online) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, o.Save(&buf))
	return buf.Bytes()
}

// TestOnlineCheckpointFixtures loads the committed checkpoints (format
// version 6) and resumes them: the pending result takes effect at its
// position, the Gram matrix kept from the checkpoint's columns tracks the
// parameters, and the pass ends with the parameters of a pass never
// interrupted. Saving the same learner today writes the same bytes, so the
// format has not changed. -update-checkpoints rewrites the files (after a
// deliberate change of the learner's arithmetic).
func TestOnlineCheckpointFixtures(t *testing.T) {
	baskets := fixtureBaskets()
	for _, fx := range checkpointFixtures {
		whole, err := TrainOnline(context.Background(), sliceSource(baskets), fx.opt, OnlineRun{})
		require.NoError(t, err)
		path := filepath.Join("testdata", fx.file)
		fresh := saveBytes(t, learnerAt(t, fx.opt, baskets, fx.pos))
		if *updateCheckpoints {
			require.NoError(t, os.WriteFile(path, fresh, 0o644))
		}
		committed, err := os.ReadFile(path)
		require.NoError(t, err)
		var o *Online
		if f64.Assembly() { // the fixtures hold the assembly kernels' bits
			require.True(t, bytes.Equal(committed, fresh), "%s: a learner saved at position %d today writes other bytes (%d, file %d)", fx.file, fx.pos, len(fresh), len(committed))
			o, err = LoadOnlineFile(path)
		} else { // the Go twins round otherwise: resume what they saved
			o, err = LoadOnline(bytes.NewReader(fresh))
		}
		require.NoError(t, err, fx.file)
		require.Equal(t, fx.pos, o.Position(), fx.file)
		require.Equal(t, fx.swapAt, o.np.SwapAt(), fx.file)
		gen := o.np.Gen()
		for q, s := range baskets[fx.pos:] {
			require.NoError(t, o.Observe(s), fx.file)
			// Results take effect at nextResult, nextResult + 10, …
			want := gen
			if o.Position() >= fx.nextResult {
				want = gen + 1 + (o.Position()-fx.nextResult)/10
			}
			require.Equal(t, want, o.np.Gen(), "%s: results in effect after basket %d", fx.file, int(fx.pos)+q+1)
		}
		requireGramTracks(t, o, fx.file)
		got := o.Params()
		require.Equal(t, whole.Params.V, got.V, fx.file)
		require.Equal(t, whole.Params.B, got.B, fx.file)
		require.Equal(t, whole.Params.D, got.D, fx.file)
	}
}

// TestOnlineCheckpointVersion5 resumes a checkpoint of format version 5,
// written before the next-item term: it resumes without the term, and
// ends with the parameters of a pass without it never interrupted.
func TestOnlineCheckpointVersion5(t *testing.T) {
	opt := OnlineOptions{D: 3, Seed: 1, DiagLR: 0.01, Schedule: Schedule{FactorEvery: 10}, NextWeight: -1}
	baskets := fixtureBaskets()
	whole, err := TrainOnline(context.Background(), sliceSource(baskets), opt, OnlineRun{})
	require.NoError(t, err)
	o, err := LoadOnlineFile(filepath.Join("testdata", "online-v5-pending-result.ckpt"))
	require.NoError(t, err)
	require.Less(t, o.Options().NextWeight, 0.0)
	require.Equal(t, int64(27), o.Position())
	for _, s := range baskets[27:] {
		require.NoError(t, o.Observe(s))
	}
	if !f64.Assembly() { // the file holds the assembly kernels' bits
		return
	}
	got := o.Params()
	require.Equal(t, whole.Params.V, got.V)
	require.Equal(t, whole.Params.B, got.B)
	require.Equal(t, whole.Params.D, got.D)
}

// smallCheckpoint is a complete checkpoint of a small learner with the
// exact normaliser, between a snapshot and its result.
func smallCheckpoint(t *testing.T) []byte {
	t.Helper()
	o := learnerAt(t, OnlineOptions{D: 2, Seed: 4, CEvery: 3, Schedule: Schedule{FactorEvery: 5, Lag: 4}}, plantedBaskets(8, 20, 2), 13)
	require.NotZero(t, o.np.SwapAt(), "a result is pending")
	require.NotEmpty(t, o.dirtyList, "columns changed since the snapshot")
	return saveBytes(t, o)
}

// Any change of one byte, any truncation and any appended byte is refused
// (the magic, the version, or the CRC-32C of the whole state).
func TestOnlineCheckpointRefusesAnyChangedByte(t *testing.T) {
	data := smallCheckpoint(t)
	_, err := LoadOnline(bytes.NewReader(data))
	require.NoError(t, err)
	for k := range data {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(data)
			bad[k] ^= x
			_, err := LoadOnline(bytes.NewReader(bad))
			require.Error(t, err, "byte %d of %d flipped by 0x%02x was accepted", k, len(data), x)
			require.True(t, strings.HasPrefix(err.Error(), "learn: online checkpoint: "), "%v", err)
		}
		_, err := LoadOnline(bytes.NewReader(data[:k]))
		require.Error(t, err, "checkpoint cut at %d of %d bytes was accepted", k, len(data))
	}
	_, err = LoadOnline(bytes.NewReader(append(bytes.Clone(data), 0)))
	require.ErrorContains(t, err, "checksum mismatch")
}

func TestOnlineCheckpointRefusesOtherInput(t *testing.T) {
	_, err := LoadOnline(bytes.NewReader([]byte("hello")))
	require.ErrorContains(t, err, "learn: online checkpoint: 5 bytes is too short")
	_, err = LoadOnline(bytes.NewReader([]byte("NDPPSTRM\x01\x00\x00\x00 a stream snapshot")))
	require.ErrorContains(t, err, `does not start with "NDPPONLN"`)
	data := smallCheckpoint(t)
	_, err = LoadOnline(bytes.NewReader(data[:len(data)/2]))
	require.ErrorContains(t, err, "corrupt")
	// Checkpoints of format version 2 (encoding/gob) say what they are and
	// what to do.
	v2 := append([]byte("ndpp-learn-online-checkpoint v2\n"), bytes.Repeat([]byte{0x7f, 0x03}, 100)...)
	path := filepath.Join(t.TempDir(), "old.ckpt")
	require.NoError(t, os.WriteFile(path, v2, 0o644))
	_, err = LoadOnlineFile(path)
	require.ErrorContains(t, err, path+": learn: online checkpoint: this is a checkpoint of an earlier ndpp (format version 2, encoding/gob)")
	require.ErrorContains(t, err, "re-run the pass")
	// A later format version is refused by number.
	later := bytes.Clone(data)
	later[binfmt.MagicLen] = checkpointVersion + 1
	_, err = LoadOnline(bytes.NewReader(later))
	require.ErrorContains(t, err, "format version 7; this build reads versions 3 to 6")
	// Version 3 (before the diagonal) says what it is and what to do.
	v3 := binfmt.NewEncoder(checkpointMagic, 3)
	v3.Int(1)
	v3data, err := v3.Finish()
	require.NoError(t, err)
	_, err = LoadOnline(bytes.NewReader(v3data))
	require.ErrorContains(t, err, "format version 3, of an earlier ndpp without the learned diagonal")
	require.ErrorContains(t, err, "re-run the pass")
	// Version 4 (without the fingerprint of the baskets consumed) says
	// why it cannot be resumed and what to do.
	v4 := binfmt.NewEncoder(checkpointMagic, 4)
	v4.Int(1)
	v4data, err := v4.Finish()
	require.NoError(t, err)
	_, err = LoadOnline(bytes.NewReader(v4data))
	require.ErrorContains(t, err, "format version 4, of an earlier ndpp that did not record a fingerprint of the baskets")
	require.ErrorContains(t, err, "re-run the pass")
	_, err = LoadOnlineFile(filepath.Join(t.TempDir(), "missing.ckpt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The input is read up to the limit and no further.
func TestOnlineCheckpointSizeLimit(t *testing.T) {
	data := smallCheckpoint(t)
	_, err := loadOnline(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	_, err = loadOnline(bytes.NewReader(data), int64(len(data)-1))
	require.ErrorContains(t, err, "larger than the limit")
	_, err = loadOnline(endless{}, 1<<20)
	require.ErrorContains(t, err, "larger than the limit")
}

// endless reads as an infinite stream of zero bytes.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestOnlineCheckpointRejectsInconsistentState changes single values of a
// valid checkpoint and encodes it again (so that the checksum holds): each
// change must be refused as corrupt rather than loaded (or panic later).
func TestOnlineCheckpointRejectsInconsistentState(t *testing.T) {
	baskets := plantedBaskets(20, 60, 3)
	o := learnerAt(t, OnlineOptions{D: 3, Seed: 1, Schedule: Schedule{FactorEvery: 10}}, baskets, 23) // a job pending
	data := saveBytes(t, o)
	decode := func() *checkpoint {
		cp, err := decodeCheckpoint(data)
		require.NoError(t, err)
		return cp
	}
	cp := decode()
	require.NotZero(t, cp.SwapAt, "the checkpoint holds a pending result")
	require.GreaterOrEqual(t, len(cp.Dirty), 2, "the checkpoint holds changed columns")
	for name, tamper := range map[string]func(*checkpoint){
		"swap in the past":      func(c *checkpoint) { c.SwapAt = c.Pos },
		"swap past the lag":     func(c *checkpoint) { c.SwapAt = c.Pos + int64(c.Opt.Schedule.Lag) + 1 },
		"lag past the period":   func(c *checkpoint) { c.Opt.Schedule.Lag = c.Opt.Schedule.FactorEvery + 1 },
		"lag zero":              func(c *checkpoint) { c.Opt.Schedule.Lag = 0 },
		"options of another d":  func(c *checkpoint) { c.Opt.D = 4 },
		"unknown optimizer":     func(c *checkpoint) { c.Opt.Optimizer = 7 },
		"kz generation ahead":   func(c *checkpoint) { c.KZGen[0] = c.Gen + 1 },
		"dirty column too big":  func(c *checkpoint) { c.Dirty[0] = c.N },
		"dirty column twice":    func(c *checkpoint) { c.Dirty[1] = c.Dirty[0] },
		"short cache":           func(c *checkpoint) { c.KZ = c.KZ[:len(c.KZ)-1] },
		"short counts":          func(c *checkpoint) { c.T = c.T[1:] },
		"odd pairs":             func(c *checkpoint) { c.PendBW = append(c.PendBW, 1) },
		"negative generation":   func(c *checkpoint) { c.Gen = -1 },
		"negative position":     func(c *checkpoint) { c.Pos = -1 },
		"pending K wrong shape": func(c *checkpoint) { c.PendK = c.PendK[:1] },
		"B of a shared model":   func(c *checkpoint) { c.Opt.Shared = true },
		"non-finite parameter":  func(c *checkpoint) { c.V[4] = math.Inf(1) },
		"trailing value":        func(c *checkpoint) { c.PendLogDet = 0 },
	} {
		c := decode()
		tamper(c)
		e := binfmt.NewEncoder(checkpointMagic, checkpointVersion)
		c.encode(e)
		if name == "trailing value" {
			e.F64(1)
		}
		tampered, err := e.Finish()
		require.NoError(t, err)
		_, err = LoadOnline(bytes.NewReader(tampered))
		require.ErrorContains(t, err, "learn: online checkpoint: corrupt", name)
		require.NotContains(t, err.Error(), "corrupt: learn:", "%s: repeated prefix", name)
	}
	// Encoded again unchanged, it is the same bytes, and it loads and
	// resumes.
	e := binfmt.NewEncoder(checkpointMagic, checkpointVersion)
	decode().encode(e)
	again, err := e.Finish()
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, again), "decoding and encoding changed the checkpoint")
	r, err := LoadOnline(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, int64(23), r.Position())
}

// Every field of OnlineOptions is stored: a field added to the options but
// not to the checkpoint fails here.
func TestOnlineCheckpointStoresEveryOption(t *testing.T) {
	var opt OnlineOptions
	next := 0
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		next++
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				fill(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Int:
			switch v.Type() {
			case reflect.TypeOf(Adam), reflect.TypeOf(NormExact):
				v.SetInt(1) // the non-default value of a two-valued enum
			default:
				v.SetInt(int64(next))
			}
		case reflect.Uint64:
			v.SetUint(uint64(next) << 40)
		case reflect.Float64:
			v.SetFloat(float64(next) + 0.25)
		case reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("OnlineOptions%s has kind %v, which this test (and the checkpoint) does not handle", path, v.Kind())
		}
	}
	fill(reflect.ValueOf(&opt).Elem(), "")
	e := binfmt.NewEncoder(checkpointMagic, checkpointVersion)
	encodeOptions(e, opt)
	data, err := e.Finish()
	require.NoError(t, err)
	d, err := binfmt.NewDecoder(data, "options", checkpointMagic, checkpointVersion, checkpointVersion)
	require.NoError(t, err)
	got := decodeOptions(d)
	require.NoError(t, d.Done())
	if diff := cmp.Diff(opt, got); diff != "" {
		t.Fatalf("options after a round trip (-want +got):\n%s", diff)
	}
}

// Save streams: a failing writer's error is returned.
func TestOnlineSaveReturnsWriteErrors(t *testing.T) {
	o := learnerAt(t, OnlineOptions{D: 2, Seed: 4, N: 8, Schedule: Schedule{FactorEvery: 5}}, plantedBaskets(8, 20, 2), 13)
	boom := errors.New("disk full")
	require.ErrorIs(t, o.Save(failWriter{boom}), boom)
	path := filepath.Join(t.TempDir(), "no-such-dir", "ck.bin")
	err := o.SaveFile(path)
	require.ErrorContains(t, err, "learn: save checkpoint: write "+path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestOnlineSkipConsumedChecksTheBaskets: a checkpoint records a
// fingerprint of the baskets it consumed; SkipConsumed accepts the same
// stream (and the resumed pass ends as one never stopped) and refuses a
// stream whose consumed part differs in any way — other baskets of the same
// length, one item changed, two baskets swapped — or is shorter.
func TestOnlineSkipConsumedChecksTheBaskets(t *testing.T) {
	bs := plantedBaskets(30, 80, 5)
	opt := OnlineOptions{D: 3, Seed: 2, Schedule: Schedule{FactorEvery: 5}}
	whole, err := TrainOnline(context.Background(), baskets.SliceSource(bs), opt, OnlineRun{})
	require.NoError(t, err)
	ck := saveBytes(t, learnerAt(t, opt, bs, 40))
	load := func() *Online {
		o, err := LoadOnline(bytes.NewReader(ck))
		require.NoError(t, err)
		return o
	}

	o := load()
	src := baskets.SliceSource(bs)
	require.NoError(t, o.SkipConsumed(context.Background(), src))
	res, err := o.Run(context.Background(), src, OnlineRun{})
	require.NoError(t, err)
	require.Equal(t, whole.Params.V, res.Params.V)

	changed := func(f func(b [][]int)) [][]int {
		c := make([][]int, len(bs))
		for i, b := range bs {
			c[i] = slices.Clone(b)
		}
		f(c)
		return c
	}
	long := slices.IndexFunc(bs[:40], func(b []int) bool { return len(b) > 1 })
	require.GreaterOrEqual(t, long, 0)
	for name, other := range map[string][][]int{
		"other baskets": plantedBaskets(30, 80, 6),
		"one item":      changed(func(b [][]int) { b[17][0] = 29 - b[17][0] }),
		"two swapped":   changed(func(b [][]int) { b[3], b[4] = b[4], b[3] }),
		"order in one":  changed(func(b [][]int) { slices.Reverse(b[long]) }),
		"a basket split": changed(func(b [][]int) {
			b[long], b[long+1] = b[long][:1], append(slices.Clone(b[long][1:]), b[long+1]...)
		}),
	} {
		require.NotEqual(t, bs[:40], other[:40], name)
		err := load().SkipConsumed(context.Background(), baskets.SliceSource(other))
		require.ErrorIs(t, err, ErrOtherBaskets, name)
		require.ErrorContains(t, err, "the first 40 baskets of the stream are not the baskets the checkpoint was trained on", name)
	}
	// Baskets after the consumed ones do not matter.
	require.NoError(t, load().SkipConsumed(context.Background(), baskets.SliceSource(changed(func(b [][]int) { b[40], b[41] = b[41], b[40] }))))
	err = load().SkipConsumed(context.Background(), baskets.SliceSource(bs[:30]))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, load().SkipConsumed(ctx, baskets.SliceSource(bs)), context.Canceled)
}
