package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/stream"
)

// The composite operations of `ndpp-bench backends`: the oracle's per-item
// scoring, a whole online MAP run and a learning pass, each timed end to end
// on each backend.
func init() {
	backendOps = append(backendOps,
		benchOp{
			name: "swap-scores", sizes: []int{8, 50},
			label: func(k int) string { return fmt.Sprintf("k=%d/d=50", k) },
			setup: func(k int) func() {
				m := ndpp.Random(2000, 50, 6, ndpp.RandomOptions{})
				o, err := detcache.NewFast(m, k)
				if err != nil {
					panic("ndpp-bench: " + err.Error())
				}
				c := o.NewCand()
				for i := 0; i < k; i++ {
					o.Prepare(c, i)
					if err := o.Add(c); err != nil {
						panic("ndpp-bench: " + err.Error())
					}
				}
				dst := make([]ndpp.Value, k)
				next := k
				return func() {
					o.Prepare(c, next)
					o.AddValue(c)
					o.SwapValues(c, dst)
					if next++; next == m.N() {
						next = k
					}
				}
			},
		},
		benchOp{
			name: "online-lss", sizes: []int{8, 32},
			label: func(k int) string { return fmt.Sprintf("n=20000/d=50/k=%d", k) },
			setup: func(k int) func() {
				m := ndpp.Random(20000, 50, 7, ndpp.RandomOptions{})
				order := stream.IDOrder(m.N())
				return func() {
					o, err := detcache.NewFast(m, k)
					if err != nil {
						panic("ndpp-bench: " + err.Error())
					}
					s, err := stream.NewOnlineLSS(o, k, stream.Options{})
					if err != nil {
						panic("ndpp-bench: " + err.Error())
					}
					if _, err := stream.Run(context.Background(), s, order, stream.RunOptions{}); err != nil {
						panic("ndpp-bench: " + err.Error())
					}
				}
			},
		},
		benchOp{
			name: "offline-greedy", sizes: []int{8},
			label: func(k int) string { return fmt.Sprintf("n=50000/d=50/k=%d", k) },
			setup: func(k int) func() {
				m := ndpp.Random(50000, 50, 8, ndpp.RandomOptions{})
				return func() {
					if _, err := stream.OfflineGreedy(context.Background(), m, k, stream.GreedyOptions{}); err != nil {
						panic("ndpp-bench: " + err.Error())
					}
				}
			},
		},
		benchOp{
			name: "learn-pass", sizes: []int{30},
			label: func(d int) string { return fmt.Sprintf("online/5000 baskets/n=1000/d=%d", d) },
			setup: func(d int) func() {
				data := syntheticBaskets(5000, 1000, 9)
				return func() {
					if _, err := learn.TrainOnline(context.Background(), baskets.SliceSource(data), learn.OnlineOptions{D: d, N: 1000, Seed: 1}, learn.OnlineRun{}); err != nil {
						panic("ndpp-bench: " + err.Error())
					}
				}
			},
		},
	)
}

// syntheticBaskets returns count baskets of 2..6 distinct items below n.
func syntheticBaskets(count, n int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int, count)
	for i := range out {
		size := 2 + rng.IntN(5)
		seen := map[int]bool{}
		for len(out[i]) < size {
			j := rng.IntN(n)
			if !seen[j] {
				seen[j] = true
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}
