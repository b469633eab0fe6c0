package learn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/ndpp-go/ndpp/internal/binfmt"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/learn/internal/exactnorm"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Online checkpoints are states of the project's binary format
// (internal/binfmt: magic, version, body, CRC-32C). Format version 6 has
// this body, all values little-endian, slices as a length and their
// entries:
//
//	options   D, Shared, LowRank, Seed, Init.Scale, Init.CScale, Init.Share,
//	          N, Optimizer, LR, DiagLR, RateScale, Alpha, Beta, Eps, Normalizer,
//	          Schedule.RefreshEvery, Schedule.FactorEvery, Schedule.Lag,
//	          CEvery, FixC, NextWeight, NextNegatives, NextBeta (after
//	          defaults)
//	n, d      items (rows) and rank
//	IDs       the item id of each row
//	V B D     parameters (B empty when B = V)
//	Phi PhiM PhiV   the diagonal's corrections and their Adam moments
//	                (empty without a diagonal)
//	Mu T      occurrences and Adam step counts per item
//	TC Pos    D's step count, baskets consumed
//	Consumed  the fingerprint of the baskets consumed (fingerprintBasket)
//	MomV MomB MomD SqV SqB SqD   Adam moments (B's empty when B = V)
//	PendC PendBW NormCount       C's gradient since D's last step
//
// and, for the exact normaliser only,
//
//	Gram K GC LogDet Factored    Gram matrix and the active factorisation
//	Dirty Z0 LastRefresh Updates changed columns and their snapshot values,
//	                             the last recomputation of G, updates since
//	Gen KZ KZGen                 results in effect, cached K zᵢ
//	SwapAt PendOK PendK PendGC PendLogDet   the finished job's result (SwapAt 0: none)
//
// Versions 1 and 2 were encoding/gob streams after a text header
// ("ndpp-learn-online-checkpoint v2\n"), version 3 the format above without
// the diagonal, the ids and the options added with them, version 4 the
// format above without Consumed; they are refused with a message that says
// so (a version 4 checkpoint could not tell other data from its own when
// resumed). Version 5, the format above without the next-item options,
// resumes without the term.
const (
	checkpointMagic   = "NDPPONLN"
	checkpointVersion = 6
	checkpointWhat    = "learn: online checkpoint"
	// gobCheckpointHeader starts the checkpoints of versions 1 and 2.
	gobCheckpointHeader = "ndpp-learn-online-checkpoint v"
)

// MaxCheckpointBytes is the largest checkpoint LoadOnline reads: a bound
// that keeps a wrong or endless input from exhausting memory, far above
// the size of real checkpoints (about 8·(8nd + 3n) bytes for n items and
// rank d with the exact normaliser, plus O(d²)).
const MaxCheckpointBytes = 64 << 30

// checkpoint is the serialised state of an Online learner: everything that
// influences future steps (float64 values are stored exactly).
type checkpoint struct {
	Opt             OnlineOptions
	N, Dim          int
	IDs             []int
	V, B, D         []float64
	Phi, PhiM, PhiV []float64
	Mu              []float64
	T               []int64
	TC, Pos         int64
	Consumed        uint64
	MomV            []float64
	MomB            []float64
	MomD            []float64
	SqV             []float64
	SqB             []float64
	SqD             []float64
	PendC           []float64 // C's gradient since D's last step (normaliser part)
	PendBW          []float64 // the basket terms' pairs since D's last step
	NormCount       int64
	// Exact normaliser: Gram matrix, active factorisation, dirty columns.
	Gram, K, GC []float64
	LogDet      float64
	Factored    bool
	Dirty       []int
	Z0          []float64 // len(Dirty)×2d, values at the last snapshot
	LastRefresh int64
	Updates     int64
	Gen         int64
	KZ          []float64 // n×2d, K zᵢ where KZGen[i] == Gen
	KZGen       []int64
	// The finished job whose result takes effect at position SwapAt (0:
	// none pending).
	SwapAt        int64
	PendOK        bool
	PendK, PendGC []float64
	PendLogDet    float64

	// When saving, the per-item arrays held in the learner's rows
	// (Online.st) are written from there, as the slices would be
	// (rowPart), instead of from MomV, MomB, SqV, SqB and KZ.
	momV, momB, sqV, sqB, kz rowPart
}

// rowPart is one of the format's per-item arrays read from the learner's
// rows: part(i) is item i's entries, for n items (nil part: none).
type rowPart struct {
	n    int
	part func(i int) []float64
}

// f64s writes x, or p's entries when p has a part, as Encoder.F64s writes
// a slice: the number of entries, then their bits.
func (p rowPart) f64s(e *binfmt.Encoder, x []float64) {
	if p.part == nil {
		e.F64s(x)
		return
	}
	if p.n == 0 {
		e.Int(0)
		return
	}
	e.Int(p.n * len(p.part(0)))
	for i := range p.n {
		for _, v := range p.part(i) {
			e.F64(v)
		}
	}
}

// Save writes the learner's state (parameters, optimiser moments, counts,
// stream position) to w, as it is encoded (the state is not copied; only
// the per-item scalars are gathered, n values each). A learner that
// diverged (ErrDiverged) is not saved: Save returns ErrDiverged and writes
// nothing.
func (o *Online) Save(w io.Writer) error {
	if o.diverged {
		return ErrDiverged
	}
	cp := checkpoint{Opt: o.opt, N: o.p.N, Dim: o.p.Dim, IDs: o.ids, V: o.p.V, B: o.p.B, D: o.p.D,
		Mu: o.st.scalars(stMu), T: o.st.counts(stT),
		TC: o.tc, Pos: o.pos, Consumed: o.consumed, MomD: o.mom.D, SqD: o.sq.D,
		PendC: o.pendC, PendBW: o.pendBW, NormCount: o.normCount}
	// The per-item rows of st are written as the arrays of the format
	// (the scalars gathered, n each; the rest from the rows as encoded).
	n := o.p.N
	if o.p.Theta != nil {
		cp.Phi, cp.PhiM, cp.PhiV = o.st.scalars(stPhi), o.st.scalars(stPhiM), o.st.scalars(stPhiV)
	}
	moment := func(k int) func(i int) []float64 {
		return func(i int) []float64 {
			mv, sv, mb, sb := o.moments(i)
			switch k {
			case 0:
				return mv
			case 1:
				return sv
			case 2:
				return mb
			}
			return sb
		}
	}
	cp.momV, cp.sqV = rowPart{n, moment(0)}, rowPart{n, moment(1)}
	if o.p.B != nil {
		cp.momB, cp.sqB = rowPart{n, moment(2)}, rowPart{n, moment(3)}
	} else {
		cp.momB, cp.sqB = rowPart{0, moment(2)}, rowPart{0, moment(3)}
	}
	if np := o.np; np != nil {
		s := np.State() // a job in flight finishes; its result stays pending
		d := o.p.Dim
		cp.Gram, cp.K, cp.GC, cp.LogDet, cp.Factored = s.Gram, s.K, s.GC, s.LogDet, o.factored
		cp.Dirty, cp.LastRefresh, cp.Updates = o.dirtyList, s.LastRefresh, s.Updates
		cp.Z0 = make([]float64, 0, len(o.dirtyList)*2*d)
		for _, i := range o.dirtyList {
			cp.Z0 = append(cp.Z0, np.Column(i)...)
		}
		cp.Gen, cp.KZGen, cp.SwapAt = s.Gen, o.st.counts(stKZGen), s.SwapAt
		cp.kz = rowPart{n, o.kzRow}
		cp.PendOK, cp.PendK, cp.PendGC, cp.PendLogDet = s.PendOK, s.PendK, s.PendGC, s.PendLogDet
	}
	e := binfmt.NewStreamEncoder(w, checkpointMagic, checkpointVersion)
	cp.encode(e)
	_, err := e.Finish()
	return err
}

func encodeOptions(e *binfmt.Encoder, o OnlineOptions) {
	e.Int(o.D)
	e.Bool(o.Shared)
	e.Bool(o.LowRank)
	e.U64(o.Seed)
	e.F64(o.Init.Scale)
	e.F64(o.Init.CScale)
	e.F64(o.Init.Share)
	e.Int(o.N)
	e.Int(int(o.Optimizer))
	e.F64(o.LR)
	e.F64(o.DiagLR)
	e.F64(o.RateScale)
	e.F64(o.Alpha)
	e.F64(o.Beta)
	e.F64(o.Eps)
	e.Int(int(o.Normalizer))
	e.Int(o.Schedule.RefreshEvery)
	e.Int(o.Schedule.FactorEvery)
	e.Int(o.Schedule.Lag)
	e.Int(o.CEvery)
	e.Bool(o.FixC)
	e.F64(o.NextWeight)
	e.Int(o.NextNegatives)
	e.F64(o.NextBeta)
}

// maxCheckpointDim bounds d in a checkpoint, so that sizes derived from it
// cannot overflow.
const maxCheckpointDim = 1 << 20

func decodeOptions(d *binfmt.Decoder) OnlineOptions {
	var o OnlineOptions
	o.D = d.Int("options d", 1, maxCheckpointDim)
	o.Shared = d.Bool()
	o.LowRank = d.Bool()
	o.Seed = d.U64()
	o.Init.Scale = d.F64()
	o.Init.CScale = d.F64()
	o.Init.Share = d.F64()
	o.N = d.Int("options n", 0, math.MaxInt)
	o.Optimizer = Optimizer(d.Int("optimizer", int(Adam), int(SGD)))
	o.LR = d.F64()
	o.DiagLR = d.F64()
	o.RateScale = d.F64()
	o.Alpha = d.F64()
	o.Beta = d.F64()
	o.Eps = d.F64()
	o.Normalizer = Normalizer(d.Int("normalizer", int(NormExact), int(NormBasket)))
	o.Schedule.RefreshEvery = d.Int("refresh-every", 1, math.MaxInt)
	o.Schedule.FactorEvery = d.Int("factor-every", 1, math.MaxInt)
	o.Schedule.Lag = d.Int("lag", 0, math.MaxInt)
	o.CEvery = d.Int("c-every", 1, math.MaxInt)
	o.FixC = d.Bool()
	if d.Version() < 6 {
		// Before the next-item term: none.
		o.NextWeight, o.NextNegatives, o.NextBeta = -1, DefaultNextNegatives, DefaultNextBeta
		return o
	}
	o.NextWeight = d.F64()
	o.NextNegatives = d.Int("next-item negatives", 1, math.MaxInt)
	o.NextBeta = d.F64()
	return o
}

func (cp *checkpoint) encode(e *binfmt.Encoder) {
	encodeOptions(e, cp.Opt)
	e.Int(cp.N)
	e.Int(cp.Dim)
	e.Ints(cp.IDs)
	e.F64s(cp.V)
	e.F64s(cp.B)
	e.F64s(cp.D)
	e.F64s(cp.Phi)
	e.F64s(cp.PhiM)
	e.F64s(cp.PhiV)
	e.F64s(cp.Mu)
	e.I64s(cp.T)
	e.I64(cp.TC)
	e.I64(cp.Pos)
	e.U64(cp.Consumed)
	cp.momV.f64s(e, cp.MomV)
	cp.momB.f64s(e, cp.MomB)
	e.F64s(cp.MomD)
	cp.sqV.f64s(e, cp.SqV)
	cp.sqB.f64s(e, cp.SqB)
	for _, x := range [][]float64{cp.SqD, cp.PendC, cp.PendBW} {
		e.F64s(x)
	}
	e.I64(cp.NormCount)
	if cp.Opt.Normalizer != NormExact {
		return
	}
	e.F64s(cp.Gram)
	e.F64s(cp.K)
	e.F64s(cp.GC)
	e.F64(cp.LogDet)
	e.Bool(cp.Factored)
	e.Ints(cp.Dirty)
	e.F64s(cp.Z0)
	e.I64(cp.LastRefresh)
	e.I64(cp.Updates)
	e.I64(cp.Gen)
	cp.kz.f64s(e, cp.KZ)
	e.I64s(cp.KZGen)
	e.I64(cp.SwapAt)
	e.Bool(cp.PendOK)
	e.F64s(cp.PendK)
	e.F64s(cp.PendGC)
	e.F64(cp.PendLogDet)
}

// decodeCheckpoint decodes a checkpoint's bytes and checks that its sizes
// and schedule are consistent (errors say "corrupt").
func decodeCheckpoint(data []byte) (*checkpoint, error) {
	if bytes.HasPrefix(data, []byte(gobCheckpointHeader)) {
		return nil, errors.New(checkpointWhat + ": this is a checkpoint of an earlier ndpp (format version 2, encoding/gob), which this version cannot read; re-run the pass from the start, or finish it with the version that wrote the checkpoint")
	}
	dec, err := binfmt.NewDecoder(data, checkpointWhat, checkpointMagic, 3, checkpointVersion)
	if err != nil {
		return nil, err
	}
	switch dec.Version() {
	case 3:
		return nil, fmt.Errorf("%s: format version 3, of an earlier ndpp without the learned diagonal, which this version cannot resume; re-run the pass from the start, or finish it with the version that wrote the checkpoint", checkpointWhat)
	case 4:
		return nil, fmt.Errorf("%s: format version 4, of an earlier ndpp that did not record a fingerprint of the baskets a checkpoint consumed, so this version could not tell whether a resumed stream is the one it was trained on (resuming on other data would mix them without notice); re-run the pass from the start, or finish it with the version that wrote the checkpoint", checkpointWhat)
	}
	cp := &checkpoint{Opt: decodeOptions(dec)}
	// Each item takes at least 8 bytes (its count in Mu).
	cp.N = dec.Int("n", 0, len(data)/8)
	cp.Dim = dec.Int("d", 1, maxCheckpointDim)
	n, d := cp.N, cp.Dim
	nd, dd, m := n*d, d*d, 2*d
	bLen, dLen := nd, n
	if cp.Opt.Shared {
		bLen = 0
	}
	if cp.Opt.LowRank {
		dLen = 0
	}
	cp.IDs = dec.Ints("IDs", 0, math.MaxInt)
	cp.V = dec.F64sLen("V", nd)
	cp.B = dec.F64sLen("B", bLen)
	cp.D = dec.F64sLen("D", dd)
	cp.Phi = dec.F64sLen("Phi", dLen)
	cp.PhiM = dec.F64sLen("PhiM", dLen)
	cp.PhiV = dec.F64sLen("PhiV", dLen)
	cp.Mu = dec.F64sLen("Mu", n)
	cp.T = dec.I64s("T")
	cp.TC = dec.I64()
	cp.Pos = dec.I64()
	cp.Consumed = dec.U64()
	cp.MomV = dec.F64sLen("MomV", nd)
	cp.MomB = dec.F64sLen("MomB", bLen)
	cp.MomD = dec.F64sLen("MomD", dd)
	cp.SqV = dec.F64sLen("SqV", nd)
	cp.SqB = dec.F64sLen("SqB", bLen)
	cp.SqD = dec.F64sLen("SqD", dd)
	cp.PendC = dec.F64sLen("PendC", dd)
	cp.PendBW = dec.F64s("PendBW")
	cp.NormCount = dec.I64()
	if cp.Opt.Normalizer == NormExact {
		cp.Gram = dec.F64sLen("Gram", m*m)
		cp.K = dec.F64sLen("K", m*m)
		cp.GC = dec.F64sLen("GC", dd)
		cp.LogDet = dec.F64()
		cp.Factored = dec.Bool()
		cp.Dirty = dec.Ints("Dirty", 0, max(n-1, 0))
		cp.Z0 = dec.F64sLen("Z0", len(cp.Dirty)*m)
		cp.LastRefresh = dec.I64()
		cp.Updates = dec.I64()
		cp.Gen = dec.I64()
		cp.KZ = dec.F64sLen("KZ", n*m)
		cp.KZGen = dec.I64s("KZGen")
		cp.SwapAt = dec.I64()
		cp.PendOK = dec.Bool()
		pendK, pendGC := 0, 0
		if cp.SwapAt != 0 && cp.PendOK {
			pendK, pendGC = m*m, dd
		}
		cp.PendK = dec.F64sLen("PendK", pendK)
		cp.PendGC = dec.F64sLen("PendGC", pendGC)
		cp.PendLogDet = dec.F64()
	}
	if err := dec.Done(); err != nil {
		return nil, err
	}
	if err := cp.check(); err != nil {
		// validate's errors carry the package prefix already.
		return nil, fmt.Errorf("%s: corrupt: %s", checkpointWhat, strings.TrimPrefix(err.Error(), "learn: "))
	}
	return cp, nil
}

// check validates what the decoder cannot: the options, counts and the
// normaliser's schedule.
func (cp *checkpoint) check() error {
	n, d := cp.N, cp.Dim
	if cp.Opt.D != d {
		return fmt.Errorf("options d = %d, arrays of d = %d", cp.Opt.D, d)
	}
	if err := cp.Opt.validate(); err != nil {
		return err
	}
	if cp.Opt.Schedule.FactorEvery > 1 && cp.Opt.Schedule.Lag == 0 {
		return fmt.Errorf("lag 0 with factor-every %d", cp.Opt.Schedule.FactorEvery)
	}
	if len(cp.T) != n || len(cp.IDs) != n || len(cp.PendBW)%(2*d) != 0 || cp.NormCount < 0 || cp.Pos < 0 || cp.TC < 0 || cp.Updates < 0 {
		return fmt.Errorf("counts do not match n = %d, d = %d", n, d)
	}
	for _, t := range cp.T {
		// A step count is at most the baskets consumed (the learner holds
		// it exactly in a float64).
		if t < 0 || t > cp.Pos {
			return fmt.Errorf("step count %d at position %d", t, cp.Pos)
		}
	}
	seenID := make(map[int]bool, n)
	for r, id := range cp.IDs {
		if seenID[id] || (r < cp.Opt.N && id != r) {
			return fmt.Errorf("item id %d of row %d (reserved rows %d)", id, r, cp.Opt.N)
		}
		seenID[id] = true
	}
	for _, x := range cp.Phi {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errors.New("non-finite diagonal corrections")
		}
	}
	if cp.Opt.Normalizer == NormExact {
		if len(cp.KZGen) != n || cp.Gen < 0 ||
			(cp.SwapAt != 0 && (cp.SwapAt <= cp.Pos || cp.SwapAt > cp.Pos+int64(cp.Opt.Schedule.lag()))) {
			return fmt.Errorf("normaliser schedule (generation %d, result at %d) does not match position %d", cp.Gen, cp.SwapAt, cp.Pos)
		}
		for _, g := range cp.KZGen {
			if g < 0 || g > cp.Gen {
				return fmt.Errorf("cached K zᵢ of generation %d, %d results in effect", g, cp.Gen)
			}
		}
		seen := make(map[int]bool, len(cp.Dirty))
		for _, i := range cp.Dirty {
			if i < 0 || i >= n {
				return fmt.Errorf("changed column %d of %d", i, n)
			}
			if seen[i] {
				return fmt.Errorf("column %d listed twice", i)
			}
			seen[i] = true
		}
	}
	p := &Params{N: n, Dim: d, V: cp.V, B: cp.B, D: cp.D}
	if cp.Opt.Shared {
		p.B = nil
	}
	if !p.finite() {
		return errors.New("non-finite parameters")
	}
	return nil
}

// LoadOnline restores a learner saved by Save, reading at most
// MaxCheckpointBytes from r. Continuing it on the rest of the stream gives
// the same parameters as never stopping. A checkpoint that is truncated,
// altered in any byte, inconsistent, or written by an earlier version in
// another format is refused with an error that says which.
func LoadOnline(r io.Reader) (*Online, error) { return loadOnline(r, MaxCheckpointBytes) }

// loadOnline is LoadOnline with a size limit.
func loadOnline(r io.Reader, limit int64) (*Online, error) {
	data, err := binfmt.ReadAll(r, checkpointWhat, limit)
	if err != nil {
		return nil, err
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		return nil, err
	}
	n, d := cp.N, cp.Dim
	p := &Params{N: n, Dim: d, V: cp.V, D: cp.D}
	if !cp.Opt.Shared {
		p.B = cp.B
	}
	o := &Online{opt: cp.Opt, p: p, tc: cp.TC, pos: cp.Pos, consumed: cp.Consumed,
		mom: &Grad{D: cp.MomD}, sq: &Grad{D: cp.SqD}, ids: cp.IDs}
	if !cp.Opt.LowRank {
		p.Theta = make([]float64, n)
	}
	o.setIDs()
	o.pendC, o.pendBW, o.normCount = cp.PendC, cp.PendBW, cp.NormCount
	o.alloc()
	o.st.grow(n)
	o.st.setScalars(stMu, cp.Mu)
	o.st.setCounts(stT, cp.T)
	if p.Theta != nil {
		o.st.setScalars(stPhi, cp.Phi)
		o.st.setScalars(stPhiM, cp.PhiM)
		o.st.setScalars(stPhiV, cp.PhiV)
	}
	for i := range n {
		mv, sv, mb, sb := o.moments(i)
		copy(mv, cp.MomV[i*d:(i+1)*d])
		copy(sv, cp.SqV[i*d:(i+1)*d])
		if p.B != nil {
			copy(mb, cp.MomB[i*d:(i+1)*d])
			copy(sb, cp.SqB[i*d:(i+1)*d])
		}
	}
	if np := o.np; np != nil {
		o.factored = cp.Factored
		np.SetState(exactnorm.State{Gram: cp.Gram, K: cp.K, GC: cp.GC, LogDet: cp.LogDet, Gen: cp.Gen,
			LastRefresh: cp.LastRefresh, Updates: cp.Updates, SwapAt: cp.SwapAt,
			PendOK: cp.PendOK, PendK: cp.PendK, PendGC: cp.PendGC, PendLogDet: cp.PendLogDet})
		for i := range n {
			copy(o.kzRow(i), cp.KZ[i*2*d:(i+1)*2*d])
		}
		o.st.setCounts(stKZGen, cp.KZGen)
		m := 2 * d
		for t, i := range cp.Dirty {
			o.itemRow(i)[stDirty] = 1
			o.dirtyList = append(o.dirtyList, i)
			copy(np.Column(i), cp.Z0[t*m:(t+1)*m])
		}
	}
	return o, nil
}

// SaveFile writes a checkpoint atomically: a reader (or a crash) sees the
// previous checkpoint or the new one, never a partial file. A diverged
// learner returns ErrDiverged and leaves the file as it was. path must
// name a regular file or a path to create (checkCheckpointPath).
func (o *Online) SaveFile(path string) error {
	if o.diverged {
		return ErrDiverged
	}
	if err := checkCheckpointPath(path); err != nil {
		return err
	}
	if err := outfile.Write(path, o.Save); err != nil {
		return fmt.Errorf("learn: save checkpoint: %w", err)
	}
	return nil
}

// fingerprintBasket returns the fingerprint h of a sequence of baskets
// extended by basket: each value — the basket's length, then its items as
// given — is added to h and mixed by the SplitMix64 finalizer (a bijection
// of 64 bits), so that any change of an item, of a basket's length, of the
// order of baskets or of items within one changes it with probability
// 1 − 2⁻⁶⁴ (0 is the fingerprint of no basket). It is a check against
// resuming on other data, not a cryptographic hash.
func fingerprintBasket(h uint64, basket []int) uint64 {
	h = mix64(h + uint64(len(basket)) + 0x9e3779b97f4a7c15)
	for _, it := range basket {
		h = mix64(h + uint64(it) + 0x9e3779b97f4a7c15)
	}
	return h
}

// mix64 is the finalizer of SplitMix64.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// ErrOtherBaskets is wrapped by the error of SkipConsumed when the stream
// does not start with the baskets the learner consumed.
var ErrOtherBaskets = errors.New("not the baskets the checkpoint was trained on")

// SkipConsumed reads from src, the learner's input read again from its
// start, the Position() baskets the learner has consumed, and checks that
// they are those baskets: the checkpoint records their fingerprint. Run on
// src then goes on as if the pass had never stopped. Other baskets — other
// data, or the same data split otherwise before it reached the learner
// (another hold-out or seed) — give an error wrapping ErrOtherBaskets,
// and resuming on them would train on mixed data; a stream with fewer
// baskets gives io.ErrUnexpectedEOF. It reads src past the consumed
// baskets only on error, and returns an error wrapping ctx.Err() once ctx
// is done. (SkipBaskets skips without the check.)
func (o *Online) SkipConsumed(ctx context.Context, src baskets.Source) error {
	if src == nil {
		panic("learn: SkipConsumed with a nil baskets.Source")
	}
	var h uint64
	for i := int64(0); i < o.pos; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("learn: skipping the baskets consumed: stopped after %d of %d: %w", i, o.pos, err)
			}
		}
		b, err := src.Next()
		if err == io.EOF {
			return fmt.Errorf("learn: the stream ended after %d of the %d baskets the checkpoint consumed: %w", i, o.pos, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
		h = fingerprintBasket(h, b)
	}
	if h != o.consumed {
		return fmt.Errorf("learn: the first %d baskets of the stream are %w (fingerprint %016x, the checkpoint's %016x): resuming on them would train on mixed data", o.pos, ErrOtherBaskets, h, o.consumed)
	}
	return nil
}

// checkCheckpointPath refuses a checkpoint path whose file exists and is
// not a regular file (outfile.CheckRegular): a checkpoint is replaced
// atomically and read back, which a device, a FIFO or a socket cannot be
// (the output policy would write through them, and a FIFO without a
// reader would block the write for ever). The error wraps
// outfile.ErrNotRegular.
func checkCheckpointPath(path string) error {
	if err := outfile.CheckRegular(path); err != nil {
		return fmt.Errorf("learn: save checkpoint: %w", err)
	}
	return nil
}

// LoadOnlineFile reads a checkpoint file (see LoadOnline).
func LoadOnlineFile(path string) (*Online, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("learn: %w", err)
	}
	defer f.Close()
	o, err := LoadOnline(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}
