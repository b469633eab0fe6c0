package learn

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"os"

	"github.com/ndpp-go/ndpp/internal/atomicfile"
)

// checkpointMagic starts every online checkpoint file.
const checkpointMagic = "ndpp-learn-online-checkpoint v2\n"

// checkpoint is the serialised state of an Online learner: everything that
// influences future steps (float64 values are stored exactly).
type checkpoint struct {
	Opt       OnlineOptions
	N, Dim    int
	V, B, D   []float64
	Mu        []float64
	T         []int64
	TC, Pos   int64
	MomV      []float64
	MomB      []float64
	MomD      []float64
	SqV       []float64
	SqB       []float64
	SqD       []float64
	SharedPB  bool
	PendC     []float64 // C's gradient since D's last step (normaliser part)
	PendBW    []float64 // the basket terms' pairs since D's last step
	NormCount int64
	// Exact normaliser: Gram matrix, active factorisation, dirty columns.
	Gram, K, GC []float64
	LogDet      float64
	Factored    bool
	Dirty       []int
	Z0          []float64 // len(Dirty)×2d, values at the last snapshot
	LastRefresh int64
	Gen         int64
	KZ          []float64 // n×2d, K zᵢ where KZGen[i] == Gen
	KZGen       []int64
	// The finished job whose result takes effect at position SwapAt (0:
	// none pending). (Checkpoints of earlier versions also hold KZAt,
	// PendItems and PendKZ, for K zᵢ computed by the job; gob skips them
	// and those K zᵢ are computed when needed.)
	SwapAt        int64
	PendOK        bool
	PendK, PendGC []float64
	PendLogDet    float64
}

// Save writes the learner's state (parameters, optimiser moments, counts,
// stream position) to w. A learner that diverged (ErrDiverged) is not
// saved: Save returns ErrDiverged and writes nothing.
func (o *Online) Save(w io.Writer) error {
	if o.diverged {
		return ErrDiverged
	}
	if _, err := io.WriteString(w, checkpointMagic); err != nil {
		return err
	}
	cp := checkpoint{Opt: o.opt, N: o.p.N, Dim: o.p.Dim, V: o.p.V, B: o.p.B, D: o.p.D, Mu: o.mu, T: o.t,
		TC: o.tc, Pos: o.pos, MomV: o.mom.V, MomB: o.mom.B, MomD: o.mom.D, SqV: o.sq.V, SqB: o.sq.B, SqD: o.sq.D,
		SharedPB: o.p.B == nil, PendC: o.pendC, PendBW: o.pendBW, NormCount: o.normCount}
	if np := o.np; np != nil {
		np.wait() // a job in flight finishes; its result stays pending
		d := o.p.Dim
		cp.Gram, cp.K, cp.GC, cp.LogDet, cp.Factored = np.nw.g, np.k, np.gc, np.logDet, o.factored
		cp.Dirty, cp.LastRefresh = o.dirtyList, o.lastRefresh
		for _, i := range o.dirtyList {
			cp.Z0 = append(cp.Z0, np.zs[i*2*d:(i+1)*2*d]...)
		}
		cp.Gen, cp.KZ, cp.KZGen, cp.SwapAt = np.gen, np.kz, np.kzGen, np.swapAt
		if np.swapAt != 0 {
			cp.PendOK = np.job.ok
			if np.job.ok {
				cp.PendK, cp.PendGC, cp.PendLogDet = np.nw.k, np.nw.gc, np.nw.logDet
			}
		}
	}
	return gob.NewEncoder(w).Encode(&cp)
}

// SaveFile writes a checkpoint atomically: a reader (or a crash) sees the
// previous checkpoint or the new one, never a partial file.
func (o *Online) SaveFile(path string) error {
	return atomicfile.Write(path, o.Save)
}

// LoadOnline restores a learner saved by Save. Continuing it on the rest of
// the stream gives the same parameters as never stopping.
func LoadOnline(r io.Reader) (*Online, error) {
	br := bufio.NewReader(r)
	head := make([]byte, len(checkpointMagic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != checkpointMagic {
		return nil, fmt.Errorf("learn: not an online checkpoint (bad header)")
	}
	var cp checkpoint
	if err := gob.NewDecoder(br).Decode(&cp); err != nil {
		return nil, fmt.Errorf("learn: corrupt online checkpoint: %w", err)
	}
	n, d := cp.N, cp.Dim
	if d < 1 || n < 0 || cp.Opt.D != d {
		return nil, fmt.Errorf("learn: corrupt online checkpoint: n = %d, d = %d", n, d)
	}
	if err := cp.Opt.validate(); err != nil {
		return nil, fmt.Errorf("learn: corrupt online checkpoint: %w", err)
	}
	nd := n * d
	bad := len(cp.V) != nd || len(cp.D) != d*d || len(cp.Mu) != n || len(cp.T) != n ||
		len(cp.MomV) != nd || len(cp.SqV) != nd || len(cp.MomD) != d*d || len(cp.SqD) != d*d ||
		cp.SharedPB != (len(cp.B) == 0) || cp.SharedPB != cp.Opt.Shared
	if !cp.SharedPB {
		bad = bad || len(cp.B) != nd || len(cp.MomB) != nd || len(cp.SqB) != nd
	}
	if cp.Opt.Normalizer == NormExact {
		m := 2 * d
		bad = bad || len(cp.Gram) != m*m || len(cp.K) != m*m || len(cp.GC) != d*d || len(cp.Z0) != len(cp.Dirty)*m ||
			len(cp.KZ) != n*m || len(cp.KZGen) != n || cp.Gen < 0 ||
			(cp.SwapAt != 0 && (cp.SwapAt <= cp.Pos || cp.SwapAt > cp.Pos+int64(cp.Opt.lag())))
		for _, i := range cp.Dirty {
			bad = bad || i < 0 || i >= n
		}
		for _, g := range cp.KZGen {
			bad = bad || g < 0 || g > cp.Gen
		}
		if cp.SwapAt != 0 && cp.PendOK {
			bad = bad || len(cp.PendK) != m*m || len(cp.PendGC) != d*d
		}
	}
	if bad || len(cp.PendC) != d*d || len(cp.PendBW)%(2*d) != 0 || cp.NormCount < 0 || cp.Pos < 0 || cp.TC < 0 {
		return nil, fmt.Errorf("learn: corrupt online checkpoint: array sizes do not match n = %d, d = %d", n, d)
	}
	p := &Params{N: n, Dim: d, V: cp.V, D: cp.D}
	if !cp.SharedPB {
		p.B = cp.B
	}
	if !p.finite() {
		return nil, fmt.Errorf("learn: corrupt online checkpoint: non-finite parameters")
	}
	o := &Online{opt: cp.Opt, p: p, mu: cp.Mu, t: cp.T, tc: cp.TC, pos: cp.Pos,
		mom: &Grad{V: cp.MomV, B: cp.MomB, D: cp.MomD}, sq: &Grad{V: cp.SqV, B: cp.SqB, D: cp.SqD}}
	if cp.SharedPB {
		o.mom.B, o.sq.B = nil, nil
	}
	o.pendC, o.pendBW, o.normCount = cp.PendC, cp.PendBW, cp.NormCount
	o.alloc()
	if np := o.np; np != nil {
		copy(np.nw.g, cp.Gram)
		copy(np.k, cp.K)
		copy(np.gc, cp.GC)
		np.logDet, o.factored, o.lastRefresh = cp.LogDet, cp.Factored, cp.LastRefresh
		np.gen = cp.Gen
		copy(np.kz, cp.KZ)
		copy(np.kzGen, cp.KZGen)
		np.swapAt = cp.SwapAt
		if cp.SwapAt != 0 {
			np.job.ok = cp.PendOK
			if cp.PendOK {
				copy(np.nw.k, cp.PendK)
				copy(np.nw.gc, cp.PendGC)
				np.nw.logDet = cp.PendLogDet
			}
		}
		m := 2 * d
		for t, i := range cp.Dirty {
			if o.dirty[i] {
				return nil, fmt.Errorf("learn: corrupt online checkpoint: column %d listed twice", i)
			}
			o.dirty[i] = true
			o.dirtyList = append(o.dirtyList, i)
			copy(np.zs[i*m:(i+1)*m], cp.Z0[t*m:(t+1)*m])
		}
	}
	return o, nil
}

// LoadOnlineFile reads a checkpoint file.
func LoadOnlineFile(path string) (*Online, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o, err := LoadOnline(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}
