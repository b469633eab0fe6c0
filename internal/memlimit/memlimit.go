package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// fallback is the budget when the machine's memory cannot be found.
const fallback = 16 << 30

// machinePrefix starts the Source of every machine default.
const machinePrefix = "3/4 of the "

// Budget is a memory budget and where it comes from.
type Budget struct {
	// Bytes is the budget (> 0 in the budgets this package returns).
	Bytes int64
	// Source names where the budget comes from, for messages: a flag
	// ("--max-memory"), an environment variable (a command's default), an
	// option of a library call, or the
	// machine limit that bounds it ("3/4 of the physical memory", …).
	Source string
	// Raise, when not empty, says how to raise a machine default, e.g.
	// "NDPP_MAX_MEMORY or ndpp-bench --max-memory raises it".
	Raise string
}

// Machine returns the default budget: three quarters of the smallest of
// the machine's physical memory, the control group's memory limit and the
// process's address-space and data size limits (16 GiB when none is
// known); the rest is headroom for the garbage collector and what the
// estimates leave out.
func Machine() Budget {
	b, src := machine()
	return Budget{Bytes: b / 4 * 3, Source: machinePrefix + src}
}

// Given returns the budget a library call was given: bytes, named source
// (e.g. "npz.LoadOptions.MaxBytes"), when bytes > 0, else the Machine
// default, which source raises.
func Given(bytes int64, source string) Budget {
	if bytes > 0 {
		return Budget{Bytes: bytes, Source: source}
	}
	b := Machine()
	b.Raise = source + " raises it"
	return b
}

// Option returns the bytes to pass to a library call's budget option: 0
// for a Machine default, so that the call takes the default of the machine
// it runs on (e.g. a pipeline's worker), else Bytes.
func (b Budget) Option() int64 {
	if strings.HasPrefix(b.Source, machinePrefix) {
		return 0
	}
	return b.Bytes
}

// Check returns an *Error when need bytes exceed the budget (a need below
// zero stands for an overflowing estimate and always exceeds it). A zero
// Budget is the Machine default.
func (b Budget) Check(what string, need int64) error {
	if b.Bytes <= 0 {
		b = Machine()
	}
	if need < 0 || need > b.Bytes {
		if need < 0 {
			need = math.MaxInt64
		}
		return &Error{What: what, Need: need, Limit: b.Bytes, Source: b.Source, Raise: b.Raise}
	}
	return nil
}

// Rename gives the refusal in err's chain, if any, the Source and Raise of
// b, and returns err: a caller that passed b.Bytes to a library call as an
// option names its own source (a flag, an environment variable) in the
// message. The errors
// that wrap the refusal must build their messages when asked (as the
// library's do), not when wrapped (fmt.Errorf). A Budget without a Source
// leaves err as it is.
func (b Budget) Rename(err error) error {
	var e *Error
	if b.Source != "" && errors.As(err, &e) {
		e.Source, e.Raise = b.Source, b.Raise
	}
	return err
}

// machine returns the smallest memory bound of the machine and the process
// that it can find, and its name.
func machine() (int64, string) {
	best, src := int64(math.MaxInt64), ""
	consider := func(b int64, name string) {
		if b > 0 && b < best {
			best, src = b, name
		}
	}
	consider(memTotal(), "physical memory")
	consider(cgroupLimit(), "control group's memory limit")
	for _, r := range rlimits() {
		consider(r.bytes, r.name)
	}
	if src == "" {
		return fallback, "default of 16 GiB (the machine's memory is unknown)"
	}
	return best, src
}

// memTotal reads MemTotal from /proc/meminfo (0 when unavailable).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 2 && fields[1] == "kB" {
			if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil && kb < math.MaxInt64/1024 {
				return kb * 1024
			}
		}
		return 0
	}
	return 0
}

// cgroupLimit reads the memory limit of the process's control group, v2
// or v1 (0 when there is none or it cannot be read).
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0
		}
		if b, err := strconv.ParseInt(s, 10, 64); err == nil && b < 1<<60 { // v1 writes ~2⁶³ for none
			return b
		}
	}
	return 0
}

// Parse reads a size: a non-negative number of bytes with an optional
// suffix K, M, G or T (powers of 1024; "KB", "KiB" and lower case are
// accepted too), e.g. "4G", "1.5G", "800M", "1048576".
func Parse(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		case 'T':
			mult, t = 1<<40, t[:n-1]
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(x > 0) || x*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("bad size %q; want a positive number of bytes with an optional suffix K, M, G or T, e.g. 8G", s)
	}
	return int64(x * mult), nil
}

// Format writes a byte count for messages, e.g. "2.2 TiB", "512 MiB".
func Format(b int64) string {
	x := float64(b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"} {
		if math.Abs(x) < 1024 || u == "PiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", b)
			}
			return fmt.Sprintf("%.3g %s", x, u)
		}
		x /= 1024
	}
	return ""
}

// Error is the refusal of an allocation larger than the budget.
type Error struct {
	What   string // what needs the memory, e.g. "a synthetic model of n = 10⁶ items and d = 10"
	Need   int64  // the estimate in bytes
	Limit  int64  // the budget
	Source string // where the budget comes from (Budget.Source)
	Raise  string // how to raise a machine default (Budget.Raise)
}

// ErrOverBudget is matched by every *Error (errors.Is); package ndpp
// exports it as ErrMemoryBudget for callers outside the module.
var ErrOverBudget = errors.New("memory budget exceeded")

// Is reports whether target is ErrOverBudget.
func (e *Error) Is(target error) bool { return target == ErrOverBudget }

func (e *Error) Error() string {
	how := "from " + e.Source
	if strings.HasPrefix(e.Source, machinePrefix) {
		how = e.Source
		if e.Raise != "" {
			how += "; " + e.Raise
		}
	}
	return fmt.Sprintf("%s needs about %s of memory, more than the limit of %s (%s)", e.What, Format(e.Need), Format(e.Limit), how)
}

// Bytes returns the product of its factors, the size of arrays, or -1 when
// it overflows an int64 or a factor is negative (which Check refuses).
func Bytes(factors ...int64) int64 {
	p := int64(1)
	for _, f := range factors {
		if f < 0 {
			return -1
		}
		if f != 0 && p > math.MaxInt64/f {
			return -1
		}
		p *= f
	}
	return p
}

// Sum adds sizes, returning -1 when one is -1 or the sum overflows.
func Sum(sizes ...int64) int64 {
	s := int64(0)
	for _, b := range sizes {
		if b < 0 || s > math.MaxInt64-b {
			return -1
		}
		s += b
	}
	return s
}

// rlimit is a process resource limit on memory.
type rlimit struct {
	bytes int64 // 0: none
	name  string
}
