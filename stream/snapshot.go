package stream

import (
	"errors"
	"fmt"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/internal/binfmt"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Snapshots are binfmt states: the magic "NDPPSTRM", format version
// snapVersion, the algorithm's name, the base fields (from version 3 with
// a flag for solvers of vector items), the oracle's own MarshalBinary
// bytes, the solver's fields (for vector items with the vectors of the
// items it keeps outside S), and a CRC-32C of it all. Version 2, without
// the flag, is read by model-backed solvers; the format before binfmt
// (version 1) is refused by its version.
const (
	snapMagic      = "NDPPSTRM"
	snapVersion    = 3
	minSnapVersion = 2
	snapWhat       = "stream: solver snapshot"
)

// marshalBase starts a snapshot with the base fields and the oracle's state;
// the caller appends its own fields and finishes it.
func (b *base) marshalBase(name string) (*binfmt.Encoder, error) {
	ob, err := b.o.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("stream: saving the oracle: %w", err)
	}
	e := binfmt.NewEncoder(snapMagic, snapVersion)
	e.String(name)
	e.Int(b.k)
	e.I64(b.items)
	e.I64(b.adds)
	e.I64(b.swaps)
	e.I64(b.evalBase)
	e.U64(b.changes)
	e.Bool(b.m == nil)
	e.Bytes(ob)
	return e, nil
}

// unmarshalBase checks the snapshot as a whole (magic, version, checksum),
// reads the base fields into a staging copy and returns the oracle's bytes
// and the decoder positioned at the solver's fields; the caller parses
// them, then calls commitOracle, so that a malformed snapshot leaves the
// solver unchanged.
func (b *base) unmarshalBase(data []byte, name string) (base, []byte, *binfmt.Decoder, error) {
	d, err := binfmt.NewDecoder(data, snapWhat, snapMagic, minSnapVersion, snapVersion)
	if err != nil {
		return base{}, nil, nil, err
	}
	if got := d.String("algorithm"); d.Err() == nil && got != name {
		return base{}, nil, nil, fmt.Errorf("stream: snapshot of %q cannot restore a %q solver", got, name)
	}
	nb := base{o: b.o, m: b.m, kern: b.kern, ichk: b.ichk}
	nb.k = d.Int("k", 1, b.o.Cap())
	nb.items = d.I64()
	nb.adds = d.I64()
	nb.swaps = d.I64()
	nb.evalBase = d.I64()
	nb.changes = d.U64()
	vec := false
	if d.Version() > minSnapVersion {
		vec = d.Bool()
	}
	ob := d.Bytes("oracle state")
	if err := d.Err(); err != nil {
		return base{}, nil, nil, err
	}
	switch {
	case vec && b.m != nil:
		return base{}, nil, nil, errors.New("stream: snapshot of a solver of vector items cannot restore a model-backed solver")
	case !vec && b.m == nil:
		return base{}, nil, nil, fmt.Errorf("stream: snapshot of a model-backed solver (format version %d) cannot restore a solver of vector items", d.Version())
	}
	if nb.items < 0 || nb.adds < 0 || nb.swaps < 0 {
		return base{}, nil, nil, errors.New("stream: snapshot has negative counters")
	}
	return nb, ob, d, nil
}

// commitOracle restores the oracle from its bytes and checks the solution
// against k and the items the solver keeps outside it (they must be disjoint).
func commitOracle(o detcache.Oracle, ob []byte, k int, outside []int) error {
	if err := o.UnmarshalBinary(ob); err != nil {
		return fmt.Errorf("stream: restoring the oracle: %w", err)
	}
	if o.Len() > k {
		return fmt.Errorf("stream: snapshot solution has %d items for k = %d", o.Len(), k)
	}
	for _, x := range outside {
		for _, it := range o.Items() {
			if x == it {
				return fmt.Errorf("stream: snapshot has item %d both in the solution and the stash", x)
			}
		}
	}
	return nil
}

// encodeVectors writes it's vectors: v, b (unless B = V) and δ.
func encodeVectors(e *binfmt.Encoder, k *ndpp.Kernel, it ndpp.Item) {
	e.F64s(it.V)
	if !k.Shared {
		e.F64s(it.B)
	}
	e.F64(it.Delta)
}

// decodeVectors reads encodeVectors' items for ids, validated
// (ndpp.CheckItem); an error is recorded in d.
func decodeVectors(d *binfmt.Decoder, k *ndpp.Kernel, ids []int) []ndpp.Item {
	out := make([]ndpp.Item, len(ids))
	for i, id := range ids {
		it := ndpp.Item{ID: id, V: d.F64sLen("v", k.D)}
		if !k.Shared {
			it.B = d.F64sLen("b", k.D)
		}
		it.Delta = d.F64()
		if d.Err() != nil {
			return nil
		}
		if err := ndpp.CheckItem(*k, it); err != nil {
			d.Fail("%v", err)
			return nil
		}
		out[i] = it
	}
	return out
}

// checkIDs validates item indices read from a snapshot (n < 0: ids of
// vector items, any id ≥ 0).
func checkIDs(n int, ids []int) error {
	seen := make(map[int]bool, len(ids))
	for _, x := range ids {
		if x < 0 || n >= 0 && x >= n {
			return fmt.Errorf("stream: snapshot has item %d out of range [0, %d)", x, n)
		}
		if seen[x] {
			return fmt.Errorf("stream: snapshot has item %d twice", x)
		}
		seen[x] = true
	}
	return nil
}
