package memlimit

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{
		"1048576": 1 << 20, "4G": 4 << 30, "4g": 4 << 30, "4GB": 4 << 30, "4GiB": 4 << 30, "1.5G": 3 << 29,
		"800M": 800 << 20, "2T": 2 << 40, "64K": 64 << 10, " 8G ": 8 << 30, "100B": 100,
	} {
		got, err := Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "G", "-1G", "0", "1X", "abc", "NaN", "Inf", "1e30T"} {
		_, err := Parse(s)
		require.Error(t, err, s)
	}
}

func TestBudgets(t *testing.T) {
	m := Machine()
	require.Positive(t, m.Bytes)
	require.Contains(t, m.Source, "3/4 of the ")
	require.Empty(t, m.Raise)

	// A library option: its bytes, or the machine default it raises.
	require.Equal(t, Budget{Bytes: 1 << 20, Source: "x.Options.MaxBytes"}, Given(1<<20, "x.Options.MaxBytes"))
	require.Equal(t, int64(1<<20), Given(1<<20, "x").Option())
	require.Equal(t, int64(0), m.Option())
	g := Given(0, "x.Options.MaxBytes")
	require.Equal(t, m.Bytes, g.Bytes)
	require.Equal(t, "x.Options.MaxBytes raises it", g.Raise)
}

func TestCheckRefusesEstimatesAboveTheBudget(t *testing.T) {
	b := Budget{Bytes: 1 << 30, Source: "NDPP_MAX_MEMORY"}
	require.NoError(t, b.Check("small", 1<<30))
	err := b.Check("a synthetic model", 3<<40)
	var me *Error
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(1<<30), me.Limit)
	require.ErrorIs(t, err, ErrOverBudget)
	require.NotErrorIs(t, errors.New("other"), ErrOverBudget)
	require.Equal(t, "a synthetic model needs about 3 TiB of memory, more than the limit of 1 GiB (from NDPP_MAX_MEMORY)", err.Error())
	// An overflowing estimate is refused.
	err = b.Check("huge", Bytes(1<<40, 1<<40))
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(math.MaxInt64), me.Need)
	// The machine default says what raises it.
	m := Budget{Bytes: 1 << 20, Source: "3/4 of the physical memory", Raise: "NDPP_MAX_MEMORY or ndpp-bench --max-memory raises it"}
	require.Equal(t, "x needs about 2 MiB of memory, more than the limit of 1 MiB (3/4 of the physical memory; NDPP_MAX_MEMORY or ndpp-bench --max-memory raises it)",
		m.Check("x", 2<<20).Error())
	// A zero budget is the machine's.
	require.NoError(t, Budget{}.Check("small", 1))
	require.ErrorAs(t, Budget{}.Check("huge", -1), &me)
	require.Equal(t, Machine().Bytes, me.Limit)
}

func TestRenameNamesTheCallersSource(t *testing.T) {
	err := error(&wrapped{Given(1<<20, "npz.LoadOptions.MaxBytes").Check("decoding", 2<<20)})
	require.Contains(t, err.Error(), "(from npz.LoadOptions.MaxBytes)")
	require.Equal(t, err, Budget{Bytes: 1 << 20, Source: "--max-memory"}.Rename(err))
	require.Equal(t, "npz: m.npz: decoding needs about 2 MiB of memory, more than the limit of 1 MiB (from --max-memory)", err.Error())
	err = Given(0, "x.MaxBytes").Check("decoding", -1)
	require.Contains(t, err.Error(), "; x.MaxBytes raises it)")
	require.Contains(t, Budget{Bytes: 1, Source: "3/4 of the physical memory", Raise: "ndpp-beam --max-memory raises it"}.Rename(err).Error(), "(3/4 of the physical memory; ndpp-beam --max-memory raises it)")
	other := errors.New("other")
	require.Equal(t, other, Budget{Bytes: 1, Source: "--max-memory"}.Rename(other))
	require.Nil(t, Budget{Bytes: 1, Source: "--max-memory"}.Rename(nil))
}

// wrapped prefixes an error, building its message when asked.
type wrapped struct{ err error }

func (w *wrapped) Error() string { return "npz: m.npz: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

func TestBytesAndSum(t *testing.T) {
	require.Equal(t, int64(8*1000*30), Bytes(8, 1000, 30))
	require.Equal(t, int64(0), Bytes(8, 0, 1<<62))
	require.Equal(t, int64(-1), Bytes(1<<32, 1<<32))
	require.Equal(t, int64(-1), Bytes(8, -1))
	require.Equal(t, int64(6), Sum(1, 2, 3))
	require.Equal(t, int64(-1), Sum(1, -1))
	require.Equal(t, int64(-1), Sum(math.MaxInt64, 1))
	require.Equal(t, "512 B", Format(512))
	require.Equal(t, "1.5 GiB", Format(3<<29))
}
