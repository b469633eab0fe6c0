package pipelines

import (
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ndpp-go/ndpp/internal/binfmt"
)

// The map pipeline's elements and accumulators, in the project's binary
// format (float64s by their bits).
func init() {
	beam.RegisterCoder(reflect.TypeOf(itemBatch{}), encodeItemBatch, decodeItemBatch)
	beam.RegisterCoder(reflect.TypeOf(coreAcc{}), encodeCoreAcc, decodeCoreAcc)
	beam.RegisterCoder(reflect.TypeOf(shardSet{}), encodeShardSet, decodeShardSet)
	beam.RegisterCoder(reflect.TypeOf(mergeAcc{}), encodeMergeAcc, decodeMergeAcc)
}

const (
	itemBatchMagic = "NDPBITEM"
	coreAccMagic   = "NDPBCORE"
	shardSetMagic  = "NDPBSHRD"
	mergeAccMagic  = "NDPBMERG"
)

func encodeItemBatch(b itemBatch) ([]byte, error) {
	e := binfmt.NewEncoder(itemBatchMagic, 1)
	e.Ints(b.IDs)
	e.F64s(b.Vals)
	return e.Finish()
}

func decodeItemBatch(data []byte) (itemBatch, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: item batch", itemBatchMagic, 1, 1)
	if err != nil {
		return itemBatch{}, err
	}
	b := itemBatch{IDs: d.Ints("ids", 0, math.MaxInt), Vals: d.F64s("rows")}
	return b, d.Done()
}

func encodeCoreAcc(a coreAcc) ([]byte, error) {
	e := binfmt.NewEncoder(coreAccMagic, 1)
	e.Ints(a.IDs)
	e.F64s(a.Vals)
	e.I64(a.Seen)
	e.Int(a.Reductions)
	return e.Finish()
}

func decodeCoreAcc(data []byte) (coreAcc, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: core-set accumulator", coreAccMagic, 1, 1)
	if err != nil {
		return coreAcc{}, err
	}
	a := coreAcc{IDs: d.Ints("ids", 0, math.MaxInt), Vals: d.F64s("rows")}
	a.Seen = d.I64()
	a.Reductions = d.Int("reductions", 0, math.MaxInt)
	return a, d.Done()
}

func encodeSet(e *binfmt.Encoder, s shardSet) {
	e.Int(s.Shard)
	e.Ints(s.IDs)
	e.F64s(s.Vals)
	e.I64(s.Seen)
	e.Int(s.Reductions)
	e.F64(s.Value.Log)
	e.Bool(s.Value.Zero)
}

func decodeSet(d *binfmt.Decoder) shardSet {
	s := shardSet{Shard: d.Int("shard", 0, math.MaxInt), IDs: d.Ints("ids", 0, math.MaxInt), Vals: d.F64s("rows")}
	s.Seen = d.I64()
	s.Reductions = d.Int("reductions", 0, math.MaxInt)
	s.Value.Log = d.F64()
	s.Value.Zero = d.Bool()
	return s
}

func encodeShardSet(s shardSet) ([]byte, error) {
	e := binfmt.NewEncoder(shardSetMagic, 1)
	encodeSet(e, s)
	return e.Finish()
}

func decodeShardSet(data []byte) (shardSet, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: shard candidates", shardSetMagic, 1, 1)
	if err != nil {
		return shardSet{}, err
	}
	s := decodeSet(d)
	return s, d.Done()
}

func encodeMergeAcc(a mergeAcc) ([]byte, error) {
	e := binfmt.NewEncoder(mergeAccMagic, 1)
	e.Int(len(a.Sets))
	for _, s := range a.Sets {
		encodeSet(e, s)
	}
	return e.Finish()
}

func decodeMergeAcc(data []byte) (mergeAcc, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: merge accumulator", mergeAccMagic, 1, 1)
	if err != nil {
		return mergeAcc{}, err
	}
	n := d.Int("sets", 0, len(data))
	var a mergeAcc
	for range n {
		if d.Err() != nil {
			break
		}
		a.Sets = append(a.Sets, decodeSet(d))
	}
	return a, d.Done()
}
