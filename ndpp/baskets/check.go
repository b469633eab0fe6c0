package baskets

import "fmt"

// Check validates in-memory baskets over n items: every basket holds at
// least one item, every item is a row in [0, n), and no basket repeats an
// item. The error names the first bad basket by its index and says what is
// wrong ("basket 3: item 7 out of range [0, 5)"), without a package prefix,
// so that a caller can say which set it was ("learn: training basket 3:
// …").
func Check(baskets [][]int, n int) error {
	for bi, s := range baskets {
		if len(s) == 0 {
			return fmt.Errorf("basket %d is empty", bi)
		}
		for p, it := range s {
			if it < 0 || it >= n {
				return fmt.Errorf("basket %d: item %d out of range [0, %d)", bi, it, n)
			}
			for q := 0; q < p; q++ {
				if s[q] == it {
					return fmt.Errorf("basket %d: duplicate item %d", bi, it)
				}
			}
		}
	}
	return nil
}
