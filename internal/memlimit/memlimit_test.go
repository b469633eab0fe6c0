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

func TestLimitPrecedence(t *testing.T) {
	t.Setenv(EnvVar, "")
	b, src, err := Limit()
	require.NoError(t, err)
	require.Positive(t, b)
	require.Contains(t, src, "3/4 of the ")

	t.Setenv(EnvVar, "3G")
	b, src, err = Limit()
	require.NoError(t, err)
	require.Equal(t, int64(3<<30), b)
	require.Equal(t, EnvVar, src)

	Set(1 << 20)
	t.Cleanup(func() { Set(0) })
	b, src, err = Limit()
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), b)
	require.Equal(t, "--max-memory", src)
	Set(0)

	t.Setenv(EnvVar, "lots")
	_, _, err = Limit()
	require.ErrorContains(t, err, `NDPP_MAX_MEMORY="lots"`)
	require.ErrorContains(t, Check("x", 1), "NDPP_MAX_MEMORY")
	require.PanicsWithValue(t, "memlimit: Set(-1): negative budget", func() { Set(-1) })
}

func TestCheckRefusesEstimatesAboveTheBudget(t *testing.T) {
	t.Setenv(EnvVar, "1G")
	require.NoError(t, Check("small", 1<<30))
	err := Check("a synthetic model", 3<<40)
	var me *Error
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(1<<30), me.Limit)
	require.Equal(t, "a synthetic model needs about 3 TiB of memory, more than the limit of 1 GiB (from NDPP_MAX_MEMORY)", err.Error())
	// An overflowing estimate is refused.
	err = Check("huge", Bytes(1<<40, 1<<40))
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(math.MaxInt64), me.Need)
}

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
