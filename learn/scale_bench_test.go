package learn

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// BenchmarkOnlinePassScale is one online pass over 10⁶ synthetic baskets
// of 10⁵ items (d = 30, default options). It runs only when -bench names
// it (it takes tens of seconds); NDPP_PASS_BASKETS overrides the number of
// baskets. It logs a hash of the learned V, B, D and θ, to compare builds.
func BenchmarkOnlinePassScale(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "PassScale") {
		b.Skip("run with -bench OnlinePassScale")
	}
	count := int64(1_000_000)
	if s := os.Getenv("NDPP_PASS_BASKETS"); s != "" {
		c, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		count = c
	}
	for range b.N {
		b.StopTimer()
		src, err := baskets.NewSynthetic(baskets.SyntheticOptions{N: 100000, Count: count, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		ra := baskets.NewReadAhead(src) // generated on another goroutine
		res, err := TrainOnline(context.Background(), ra, OnlineOptions{D: 30}, OnlineRun{})
		if err != nil {
			b.Fatal(err)
		}
		ra.Close()
		b.StopTimer()
		b.Logf("baskets %d, items %d, params hash %x", res.Baskets, res.Params.N, paramsHash(res.Params))
		b.StartTimer()
	}
}

// paramsHash returns a SHA-256 of the bits of p's V, B, D and θ.
func paramsHash(p *Params) []byte {
	h := sha256.New()
	var buf [8]byte
	for _, s := range [][]float64{p.V, p.B, p.D, p.Theta} {
		binary.LittleEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		for _, x := range s {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
			h.Write(buf[:])
		}
	}
	return h.Sum(nil)
}
