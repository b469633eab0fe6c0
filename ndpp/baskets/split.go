package baskets

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// splitStream is the second PCG word of Split's generator, fixed so that a
// seed names the same split in every version.
const splitStream = 0x5851f42d4c957f2d

// Split divides baskets into training, validation and test sets of sizes
// len−nVal−nTest, nVal and nTest by a seeded random permutation (PCG from
// math/rand/v2): the same baskets and seed always give the same split.
// Inside each part the baskets keep their input order. The parts share the
// basket slices with the input (nothing is copied). The NDPP papers use
// nVal = 300 and nTest = 2000.
func Split(baskets [][]int, nVal, nTest int, seed uint64) (train, val, test [][]int, err error) {
	if nVal < 0 || nTest < 0 {
		return nil, nil, nil, fmt.Errorf("baskets: split sizes nVal = %d, nTest = %d must be ≥ 0", nVal, nTest)
	}
	if n := len(baskets); nVal > n || nTest > n || nVal+nTest > n {
		return nil, nil, nil, fmt.Errorf("baskets: cannot split %d baskets into %d validation and %d test baskets", n, nVal, nTest)
	}
	perm := rand.New(rand.NewPCG(seed, splitStream)).Perm(len(baskets))
	pick := func(idx []int) [][]int {
		idx = slices.Clone(idx)
		slices.Sort(idx)
		out := make([][]int, len(idx))
		for i, j := range idx {
			out[i] = baskets[j]
		}
		return out
	}
	val = pick(perm[:nVal])
	test = pick(perm[nVal : nVal+nTest])
	train = pick(perm[nVal+nTest:])
	return train, val, test, nil
}
