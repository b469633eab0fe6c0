package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/items"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
)

func init() {
	register.DoFn3x1[context.Context, int64, func(int64, itemBatch), error](&readItemsFn{})
	register.Emitter2[int64, itemBatch]()
	register.Combiner3[coreAcc, itemBatch, shardSet](&coresetFn{})
	register.Function2x1[int64, shardSet, shardSet](keyShardSet)
	register.Combiner3[mergeAcc, shardSet, mergeAcc](&mergeFn{})
	register.DoFn2x2[context.Context, mergeAcc, string, error](&solveFn{})
	register.DoFn2x1[context.Context, string, error](&writeJSONFn{})
}

// DefaultMapBuffer is the number of items a core-set accumulator holds
// before it reduces them to its k′ candidates when a shard's items are not
// held whole (see MapOptions.Buffer).
const DefaultMapBuffer = 1 << 13

// mapBytesFactor is the memory a shard's accumulator takes per byte of the
// items it holds whole, as measured on Prism in process (lifted combines
// keep encoded and decoded copies): 10⁶ items of 160 bytes held whole
// peaked at 2.3–2.5 GB.
const mapBytesFactor = 16

// MapBufferMemory estimates the memory of a shard's accumulator holding
// items whole, each of width float64 values (items.Width of the kernel)
// and its id: mapBytesFactor (16) times their bytes, as measured on Prism
// in process. It returns -1 when the estimate overflows an int64 or a size
// is negative.
func MapBufferMemory(items, width int) int64 {
	return memlimit.Bytes(int64(items), int64(width)+1, 8*mapBytesFactor)
}

// Polish selects the greedy solves that local search (stream.LocalSearch)
// improves.
type Polish int

const (
	// PolishFinal polishes the final solution only, searching swaps among
	// the union of the shards' candidates (the default).
	PolishFinal Polish = iota
	// PolishNone keeps every greedy solution as it is.
	PolishNone
	// PolishAll also polishes every round of every core-set (shards,
	// reductions and the merge).
	PolishAll
)

// String returns the flag value of p: "final", "none" or "all".
func (p Polish) String() string {
	switch p {
	case PolishFinal:
		return "final"
	case PolishNone:
		return "none"
	case PolishAll:
		return "all"
	}
	return fmt.Sprintf("Polish(%d)", int(p))
}

// ParsePolish parses "final", "none" or "all".
func ParsePolish(s string) (Polish, error) {
	for _, p := range []Polish{PolishFinal, PolishNone, PolishAll} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("pipelines: polish %q; want final, none or all", s)
}

// MapOptions configures Map.
type MapOptions struct {
	// Items is a glob of item files (NPY or text, optionally gzip, as
	// package items reads them) on a Beam filesystem.
	Items string
	// Kernel is the path of a model file whose kernel the items share
	// (npz.LoadKernel: C, B = V, diagonal).
	Kernel string
	// K is the size of the solution (≥ 1, at most the kernel's rank
	// bound).
	K int
	// Shards is the number of shards (default 1): item id mod Shards.
	Shards int
	// Coreset is the size k′ ≥ K of each shard's candidate set (0:
	// stream.DefaultCoresetFactor·K; beyond the kernel's rank bound the
	// candidates are picked in rounds, see stream.CoresetOptions).
	Coreset int
	// Polish selects the greedy solves that local search improves
	// (default PolishFinal).
	Polish Polish
	// Buffer is the number of items an accumulator holds before reducing
	// them to k′ candidates (at least k′+1). Zero means: each shard's items
	// held whole (no reduction) when a bound on their number is known (NPY
	// headers; the sizes of uncompressed text files, at two bytes per
	// field) and their MapBufferMemory fits MaxMemory, else
	// DefaultMapBuffer.
	Buffer int
	// MaxMemory is the memory budget in bytes that a shard's items held
	// whole must fit (see Buffer); 0 means three quarters of the driver's
	// machine or process memory limit.
	MaxMemory int64
	// ChunkSize is the number of items that travel together
	// (DefaultChunkSize·8 if 0).
	ChunkSize int
	// Out, if not empty, is the path the JSON result is written to.
	Out string
}

// MapShard is one shard's statistics in a MapResult.
type MapShard struct {
	Shard      int     `json:"shard"`
	Items      int64   `json:"items"`      // items the shard held
	Reductions int     `json:"reductions"` // times an accumulator was reduced to k′ candidates before the shard's final core-set
	Candidates int     `json:"candidates"` // size of the shard's candidate set
	LogDet     float64 `json:"log_det"`    // log det over the candidates (−Inf: zero)
}

// MapMerge is the merge's statistics in a MapResult.
type MapMerge struct {
	Union      int     `json:"union"`      // distinct candidates of all shards
	Candidates int     `json:"candidates"` // candidates kept by the merge
	LogDet     float64 `json:"log_det"`    // log det over them
}

// MapResult is the JSON output of Map.
type MapResult struct {
	K        int        `json:"k"`
	IDs      []int      `json:"ids"`
	LogDet   float64    `json:"log_det"` // log det L_S of the solution (−Inf: zero, written as null)
	Zero     bool       `json:"zero"`    // the solution's determinant is zero
	Algo     string     `json:"algo"`
	Items    int64      `json:"items"`
	Shards   int        `json:"shards"`
	Coreset  int        `json:"coreset"`
	Polish   string     `json:"polish"` // final, none or all
	Buffer   int        `json:"buffer"` // items an accumulator holds before a reduction (0: the shards' items held whole)
	Merge    MapMerge   `json:"merge"`
	PerShard []MapShard `json:"per_shard"`
}

// itemBatch is items of one shard travelling together: their ids and their
// rows (items.Width values each).
type itemBatch struct {
	IDs  []int
	Vals []float64
}

// coreAcc is a shard's core-set accumulator: items not yet reduced (or
// the candidates of the last reduction and the items added since).
type coreAcc struct {
	IDs        []int
	Vals       []float64
	Seen       int64
	Reductions int
}

// shardSet is a shard's candidate set and statistics.
type shardSet struct {
	Shard      int
	IDs        []int
	Vals       []float64
	Seen       int64
	Reductions int
	Value      ndpp.Value
}

// mergeAcc is the union of the shards' candidate sets.
type mergeAcc struct {
	Sets []shardSet
}

// kernelCache holds the kernel a worker loaded.
var kernelCache cached[ndpp.Kernel]

// LoadItemKernel reads the kernel description of a model file on any Beam
// filesystem (npz.LoadKernel; files not on the local filesystem are copied
// to a local temporary file first).
func LoadItemKernel(ctx context.Context, path string) (ndpp.Kernel, error) {
	local := path
	if strings.Contains(path, "://") {
		data, err := readFile(ctx, path)
		if err != nil {
			return ndpp.Kernel{}, err
		}
		f, err := os.CreateTemp("", "ndpp-kernel-*.npz")
		if err != nil {
			return ndpp.Kernel{}, err
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(data); err != nil {
			f.Close()
			return ndpp.Kernel{}, err
		}
		if err := f.Close(); err != nil {
			return ndpp.Kernel{}, err
		}
		local = f.Name()
	}
	kern, err := npz.LoadKernel(local)
	if err != nil {
		return ndpp.Kernel{}, fmt.Errorf("pipelines: kernel %s: %w", path, err)
	}
	if err := kern.Check(); err != nil {
		return ndpp.Kernel{}, fmt.Errorf("pipelines: kernel %s: %w", path, err)
	}
	return kern, nil
}

// openItems opens an item file on its Beam filesystem.
func openItems(ctx context.Context, path string, kern ndpp.Kernel) (*items.Reader, io.Closer, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		fs.Close()
		return nil, nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	r, err := items.Open(rc, kern, items.Options{})
	if err != nil {
		rc.Close()
		fs.Close()
		return nil, nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return r, closers{rc, fs}, nil
}

type closers []io.Closer

func (c closers) Close() error {
	var err error
	for _, x := range c {
		err = errors.Join(err, x.Close())
	}
	return err
}

// itemFiles is the driver's view of the item files: for NPY files the id
// offset of each file (the rows of the files before it in name order) and
// their total, for text files nil offsets (ids as written), total −1 and
// in bound an upper bound on their items from their sizes (a line holds at
// least two bytes per field), or −1 when a file is compressed.
func itemFiles(ctx context.Context, files []string, kern ndpp.Kernel) (offsets []int, total, bound int, err error) {
	npy, text := 0, 0
	offsets = make([]int, len(files))
	var textBytes int64
	for i, f := range files {
		r, c, err := openItems(ctx, f, kern)
		if err != nil {
			return nil, 0, 0, err
		}
		n := r.Len()
		c.Close()
		if r.Format() == items.FormatNPY {
			npy++
			offsets[i] = total
			total += n
			continue
		}
		text++
		if textBytes < 0 || r.Gzip() {
			textBytes = -1
			continue
		}
		size, err := fileSize(ctx, f)
		if err != nil {
			return nil, 0, 0, err
		}
		textBytes += size
	}
	if npy > 0 && text > 0 {
		return nil, 0, 0, fmt.Errorf("pipelines: the items mix %d NPY and %d text files; ids would be ambiguous (NPY ids are row positions offset by file, text ids are written)", npy, text)
	}
	if text > 0 {
		if textBytes < 0 {
			return nil, -1, -1, nil
		}
		return nil, -1, int(textBytes / int64(2*(items.Width(kern)+1))), nil
	}
	return offsets, total, total, nil
}

// fileSize is the size of a file on its Beam filesystem.
func fileSize(ctx context.Context, path string) (int64, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return 0, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer fs.Close()
	size, err := fs.Size(ctx, path)
	if err != nil {
		return 0, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return size, nil
}

// readItemsFn reads part Part of Parts of one item file (every Parts-th
// block of ChunkSize rows) and emits its items in batches keyed by shard,
// id mod Shards. NPY ids are the row position plus the file's offset.
type readItemsFn struct {
	Files      []string
	Offsets    []int // nil: text files, ids as written
	KernelPath string
	Parts      int
	Shards     int
	ChunkSize  int
}

func (f *readItemsFn) ProcessElement(ctx context.Context, key int64, emit func(int64, itemBatch)) error {
	t := keyTask(key, f.Parts)
	kern, err := kernelCache.get(ctx, f.KernelPath, LoadItemKernel)
	if err != nil {
		return err
	}
	r, c, err := openItems(ctx, f.Files[t.File], kern)
	if err != nil {
		return err
	}
	defer c.Close()
	bufs := make([]itemBatch, f.Shards)
	flush := func(s int) {
		if len(bufs[s].IDs) > 0 {
			emit(int64(s), bufs[s])
			bufs[s] = itemBatch{}
		}
	}
	for block := 0; ; block++ {
		batch, err := r.Next(f.ChunkSize)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("pipelines: %s: %w", f.Files[t.File], err)
		}
		if block%f.Parts != t.Part {
			continue
		}
		for _, it := range batch {
			id := it.ID
			if f.Offsets != nil {
				id += f.Offsets[t.File]
			}
			s := id % f.Shards
			b := &bufs[s]
			b.IDs = append(b.IDs, id)
			b.Vals = appendRow(b.Vals, it, kern)
			if len(b.IDs) >= f.ChunkSize {
				flush(s)
			}
		}
	}
	for s := range bufs {
		flush(s)
	}
	return nil
}

// appendRow appends an item's row [v; b; δ] to vals.
func appendRow(vals []float64, it ndpp.Item, kern ndpp.Kernel) []float64 {
	vals = append(vals, it.V...)
	if !kern.Shared {
		vals = append(vals, it.B...)
	}
	if kern.Diag {
		vals = append(vals, it.Delta)
	}
	return vals
}

// rowItems returns the items of ids and rows (views into vals).
func rowItems(ids []int, vals []float64, kern ndpp.Kernel) []ndpp.Item {
	w, d := items.Width(kern), kern.D
	out := make([]ndpp.Item, len(ids))
	for i, id := range ids {
		row := vals[i*w : (i+1)*w : (i+1)*w]
		it := ndpp.Item{ID: id, V: row[:d:d]}
		if !kern.Shared {
			it.B = row[d : 2*d : 2*d]
		}
		if kern.Diag {
			it.Delta = row[w-1]
		}
		out[i] = it
	}
	return out
}

// coresetFn is the shard's CombineFn: it accumulates items and reduces
// them to k′ candidates (stream.Coreset) whenever an accumulator holds
// more than Buffer items, and at the end.
type coresetFn struct {
	KernelPath string
	K          int
	Size       int
	Polish     bool
	Buffer     int
}

func (f *coresetFn) opts() stream.CoresetOptions {
	return stream.CoresetOptions{Size: f.Size, Polish: f.Polish, Workers: 1}
}

func (f *coresetFn) CreateAccumulator() coreAcc { return coreAcc{} }

func (f *coresetFn) AddInput(a coreAcc, in itemBatch) (coreAcc, error) {
	a.IDs = append(a.IDs, in.IDs...)
	a.Vals = append(a.Vals, in.Vals...)
	a.Seen += int64(len(in.IDs))
	return f.maybeReduce(a)
}

func (f *coresetFn) MergeAccumulators(a, b coreAcc) (coreAcc, error) {
	a.IDs = append(a.IDs, b.IDs...)
	a.Vals = append(a.Vals, b.Vals...)
	a.Seen += b.Seen
	a.Reductions += b.Reductions
	return f.maybeReduce(a)
}

func (f *coresetFn) maybeReduce(a coreAcc) (coreAcc, error) {
	if len(a.IDs) <= f.Buffer {
		return a, nil
	}
	c, err := f.reduce(a)
	if err != nil {
		return a, err
	}
	a.IDs, a.Vals = c.IDs, c.Vals
	a.Reductions++
	return a, nil
}

func (f *coresetFn) reduce(a coreAcc) (shardSet, error) {
	// A CombineFn's methods get no context: the kernel's filesystem is
	// opened, and the core-set solved, with a background one.
	ctx := context.Background()
	kern, err := kernelCache.get(ctx, f.KernelPath, LoadItemKernel)
	if err != nil {
		return shardSet{}, err
	}
	c, err := stream.Coreset(ctx, kern, rowItems(a.IDs, a.Vals, kern), f.K, f.opts())
	if err != nil {
		return shardSet{}, fmt.Errorf("pipelines: core-set: %w", err)
	}
	return candidateSet(c, kern), nil
}

func (f *coresetFn) ExtractOutput(a coreAcc) (shardSet, error) {
	s, err := f.reduce(a)
	if err != nil {
		return shardSet{}, err
	}
	s.Seen, s.Reductions = a.Seen, a.Reductions
	return s, nil
}

// candidateSet is a candidate set as rows.
func candidateSet(c stream.Candidates, kern ndpp.Kernel) shardSet {
	s := shardSet{IDs: c.IDs(), Value: c.Value}
	for _, it := range c.Items {
		s.Vals = appendRow(s.Vals, it, kern)
	}
	return s
}

// keyShardSet records the shard in its set.
func keyShardSet(shard int64, s shardSet) shardSet {
	s.Shard = int(shard)
	return s
}

// mergeFn collects the shards' candidate sets; the merge itself
// (stream.MergeCoresets, once over all of them) is solveFn's, so that it
// depends on the union only.
type mergeFn struct{}

func (mergeFn) CreateAccumulator() mergeAcc { return mergeAcc{} }

func (mergeFn) AddInput(a mergeAcc, s shardSet) mergeAcc {
	a.Sets = append(a.Sets, s)
	return a
}

func (mergeFn) MergeAccumulators(a, b mergeAcc) mergeAcc {
	a.Sets = append(a.Sets, b.Sets...)
	return a
}

func (mergeFn) ExtractOutput(a mergeAcc) mergeAcc {
	slices.SortFunc(a.Sets, func(x, y shardSet) int { return x.Shard - y.Shard })
	return a
}

// solveFn merges the shards' candidates (stream.MergeCoresets: the
// merge's statistics) and solves the final k items from their union
// (stream.SolveCandidates), emitting the JSON result.
type solveFn struct {
	KernelPath string
	K          int
	Size       int
	Polish     int // a Polish
	Shards     int
	Buffer     int // MapResult.Buffer
}

func (f *solveFn) ProcessElement(ctx context.Context, a mergeAcc) (string, error) {
	kern, err := kernelCache.get(ctx, f.KernelPath, LoadItemKernel)
	if err != nil {
		return "", err
	}
	polish := Polish(f.Polish)
	opt := stream.CoresetOptions{Size: f.Size, Polish: polish == PolishAll}
	res := MapResult{K: f.K, Shards: f.Shards, Polish: polish.String(), Buffer: f.Buffer, Coreset: f.Size, PerShard: []MapShard{}}
	if res.Coreset == 0 {
		res.Coreset = stream.DefaultCoresetFactor * f.K
	}
	sets := make([]stream.Candidates, len(a.Sets))
	distinct := map[int]bool{}
	for i, s := range a.Sets {
		sets[i] = stream.Candidates{Items: rowItems(s.IDs, s.Vals, kern), Value: s.Value, Shards: 1, Seen: s.Seen}
		res.Items += s.Seen
		for _, id := range s.IDs {
			distinct[id] = true
		}
		res.PerShard = append(res.PerShard, MapShard{Shard: s.Shard, Items: s.Seen, Reductions: s.Reductions, Candidates: len(s.IDs), LogDet: s.Value.Log})
	}
	if len(sets) == 0 {
		return "", errors.New("pipelines: map: no items")
	}
	m, err := stream.MergeCoresets(ctx, kern, sets, f.K, opt)
	if err != nil {
		return "", fmt.Errorf("pipelines: merge: %w", err)
	}
	res.Merge = MapMerge{Union: len(distinct), Candidates: len(m.Items), LogDet: m.Value.Log}
	// The final solve starts from the union of the shards' sets: greedy's
	// k picks on it are those on the merged k′ candidates (greedy's first
	// picks are among them), and local search, unless PolishNone,
	// searches swaps among all of the union.
	union := stream.Candidates{}
	for _, c := range sets {
		union.Items = append(union.Items, c.Items...)
	}
	opt.Polish = polish != PolishNone
	sol, err := stream.SolveCandidates(ctx, kern, union, f.K, opt)
	if err != nil {
		return "", fmt.Errorf("pipelines: final solve: %w", err)
	}
	if len(sol.Solution) < f.K {
		return "", fmt.Errorf("pipelines: map: %d items for k = %d", len(sol.Solution), f.K)
	}
	res.IDs, res.LogDet, res.Zero, res.Algo = sol.Solution, sol.Value.Log, sol.Value.Zero, sol.Algo
	return marshalMap(res)
}

// marshalMap writes r as indented JSON; infinite log dets become null.
func marshalMap(r MapResult) (string, error) {
	type alias MapResult
	fix := func(x float64) *float64 {
		if x < -1e308 || x > 1e308 || x != x {
			return nil
		}
		return &x
	}
	type shard struct {
		MapShard
		LogDet *float64 `json:"log_det"`
	}
	out := struct {
		alias
		LogDet   *float64 `json:"log_det"`
		Merge    any      `json:"merge"`
		PerShard []shard  `json:"per_shard"`
	}{alias: alias(r), LogDet: fix(r.LogDet)}
	out.Merge = struct {
		MapMerge
		LogDet *float64 `json:"log_det"`
	}{r.Merge, fix(r.Merge.LogDet)}
	out.PerShard = []shard{}
	for _, s := range r.PerShard {
		out.PerShard = append(out.PerShard, shard{s, fix(s.LogDet)})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return "", err
	}
	return string(data) + "\n", nil
}

// writeJSONFn writes the result to Path.
type writeJSONFn struct {
	Path string
}

func (f *writeJSONFn) ProcessElement(ctx context.Context, s string) error {
	return writeFile(ctx, f.Path, []byte(s))
}

// Map adds the MAP-inference pipeline to s: the items of opt.Items, keyed
// by shard (id mod Shards), reduced per shard to a candidate set by a
// CombineFn (stream.Coreset, whenever an accumulator exceeds Buffer items
// and at the end), the shards' sets collected by a global Combine, merged
// (stream.MergeCoresets) and solved into k items (stream.SolveCandidates),
// written as JSON (MapResult) to opt.Out. It returns the collection of
// the one JSON text. The kernel and the files are checked here, in the
// driver: a missing kernel, k above the kernel's rank bound, NPY files of
// the wrong width or a mix of NPY and text files are errors before the
// pipeline runs.
func Map(ctx context.Context, s beam.Scope, opt MapOptions) (beam.PCollection, error) {
	kern, err := LoadItemKernel(ctx, opt.Kernel)
	if err != nil {
		return beam.PCollection{}, err
	}
	shards := max(opt.Shards, 1)
	size := opt.Coreset
	if size == 0 {
		size = stream.DefaultCoresetFactor * opt.K
	}
	switch {
	case opt.K < 1:
		return beam.PCollection{}, fmt.Errorf("pipelines: k = %d; need k ≥ 1", opt.K)
	case opt.K > kern.MaxRank(-1):
		return beam.PCollection{}, fmt.Errorf("pipelines: k = %d exceeds the kernel's rank bound %d (d = %d%s): larger sets have determinant 0", opt.K, kern.MaxRank(-1), kern.D, map[bool]string{true: ", B = V", false: ""}[kern.Shared])
	case size < opt.K:
		return beam.PCollection{}, fmt.Errorf("pipelines: core-set size k′ = %d below k = %d", size, opt.K)
	case opt.Shards < 0 || opt.Buffer < 0 || opt.ChunkSize < 0:
		return beam.PCollection{}, fmt.Errorf("pipelines: shards %d, buffer %d, chunk size %d; want ≥ 0", opt.Shards, opt.Buffer, opt.ChunkSize)
	case opt.Polish < PolishFinal || opt.Polish > PolishAll:
		return beam.PCollection{}, fmt.Errorf("pipelines: %v; want PolishFinal, PolishNone or PolishAll", opt.Polish)
	case opt.Buffer > 0 && opt.Buffer <= size:
		return beam.PCollection{}, fmt.Errorf("pipelines: buffer of %d items; need more than k′ = %d", opt.Buffer, size)
	}
	chunk := opt.ChunkSize
	if chunk == 0 {
		chunk = 8 * DefaultChunkSize
	}
	files, err := MatchFiles(ctx, opt.Items)
	if err != nil {
		return beam.PCollection{}, err
	}
	offsets, total, bound, err := itemFiles(ctx, files, kern)
	if err != nil {
		return beam.PCollection{}, err
	}
	if total >= 0 && total < opt.K {
		return beam.PCollection{}, fmt.Errorf("pipelines: %d items for k = %d", total, opt.K)
	}
	buffer, reported := opt.Buffer, opt.Buffer
	if buffer == 0 {
		buffer, reported = autoBuffer(bound, size, kern, opt.MaxMemory)
		if err != nil {
			return beam.PCollection{}, err
		}
	}
	s = s.Scope("map")
	r := reader{Files: files, Parts: shards}
	batches := beam.ParDo(s, &readItemsFn{Files: files, Offsets: offsets, KernelPath: opt.Kernel, Parts: shards, Shards: shards, ChunkSize: chunk}, readTasks(s, r))
	perShard := beam.CombinePerKey(s, &coresetFn{KernelPath: opt.Kernel, K: opt.K, Size: size, Polish: opt.Polish == PolishAll, Buffer: buffer}, batches)
	sets := beam.ParDo(s, keyShardSet, perShard)
	all := beam.Combine(s, &mergeFn{}, sets)
	out := beam.ParDo(s, &solveFn{KernelPath: opt.Kernel, K: opt.K, Size: size, Polish: int(opt.Polish), Shards: shards, Buffer: reported}, all)
	if opt.Out != "" {
		beam.ParDo0(s, &writeJSONFn{Path: opt.Out}, out)
	}
	return out, nil
}

// autoBuffer is the accumulators' buffer when none is given: each shard's
// items held whole (a buffer no shard exceeds; reported as 0) when total
// items (an upper bound on their number from the NPY headers or the text
// files' sizes; negative: unknown) fit the memory budget maxMemory
// (MapOptions.MaxMemory), else DefaultMapBuffer.
func autoBuffer(total, size int, kern ndpp.Kernel, maxMemory int64) (buffer, reported int) {
	if total < 0 {
		return DefaultMapBuffer, DefaultMapBuffer
	}
	if need := MapBufferMemory(total, items.Width(kern)); need < 0 || need > memlimit.Given(maxMemory, "MapOptions.MaxMemory").Bytes {
		return DefaultMapBuffer, DefaultMapBuffer
	}
	return max(total, size+1), 0
}

// ReadMapResult reads a result written by Map.
func ReadMapResult(path string) (*MapResult, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	var raw struct {
		MapResult
		LogDet *float64 `json:"log_det"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	r := raw.MapResult
	r.LogDet = math.Inf(-1)
	if raw.LogDet != nil {
		r.LogDet = *raw.LogDet
	}
	return &r, nil
}
