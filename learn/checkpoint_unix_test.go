//go:build unix

package learn

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// readCounter counts the baskets read from a baskets.Source.
type readCounter struct {
	baskets.Source
	read int
}

func (c *readCounter) Next() ([]int, error) {
	c.read++
	return c.Source.Next()
}

// TestOnlineCheckpointMustBeARegularFile: a checkpoint is replaced
// atomically and read back, which a FIFO, a socket or a device cannot do
// (writing to a FIFO without a reader would wait for ever): SaveFile
// refuses them, and Run refuses such a Checkpoint before it reads a
// basket; the special file is left as it is.
func TestOnlineCheckpointMustBeARegularFile(t *testing.T) {
	fifo, _ := ndpptest.FIFO(t)
	defer ndpptest.ReleaseFIFO(fifo)
	paths := []string{fifo, ndpptest.Socket(t)}
	if os.Geteuid() == 0 {
		paths = append(paths, ndpptest.NullDevice(t))
	}
	opt := OnlineOptions{D: 2, Seed: 4, N: 8}
	for _, path := range paths {
		o := learnerAt(t, opt, plantedBaskets(8, 20, 2), 5)
		err := o.SaveFile(path)
		require.ErrorIs(t, err, outfile.ErrNotRegular, path)
		require.ErrorContains(t, err, "learn: save checkpoint: ")

		o, err = NewOnline(opt)
		require.NoError(t, err)
		src := &readCounter{Source: baskets.SliceSource(plantedBaskets(8, 20, 2))}
		_, err = o.Run(context.Background(), src, OnlineRun{Checkpoint: path, CheckpointEvery: 5})
		require.ErrorIs(t, err, outfile.ErrNotRegular, path)
		require.Zero(t, src.read, "baskets read before the checkpoint was refused")
		require.Zero(t, o.Position())
	}
	st, err := os.Lstat(fifo)
	require.NoError(t, err)
	require.Equal(t, os.ModeNamedPipe, st.Mode().Type())
}
