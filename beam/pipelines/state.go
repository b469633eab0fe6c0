package pipelines

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// readFile reads a whole file from its Beam filesystem.
func readFile(ctx context.Context, path string) ([]byte, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return data, nil
}

// writeFile writes a whole file: a local path (no "scheme://") under
// ndpp's output policy (internal/outfile: a regular file or a symbolic
// link's target replaced atomically, a device or FIFO written through),
// any other on its Beam filesystem (replacing it).
func writeFile(ctx context.Context, path string, data []byte) error {
	if !strings.Contains(path, "://") {
		if err := outfile.Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return fmt.Errorf("pipelines: %w", err)
		}
		return nil
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer fs.Close()
	wc, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	if _, err := wc.Write(data); err != nil {
		wc.Close()
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	if err := wc.Close(); err != nil {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return nil
}

// removeFile removes a file when its filesystem can.
func removeFile(ctx context.Context, path string) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	if r, ok := fs.(filesystem.Remover); ok {
		return r.Remove(ctx, path)
	}
	return nil
}

// SaveModel writes m as an .npz file to any Beam filesystem.
func SaveModel(ctx context.Context, path string, m *ndpp.Model) error {
	var buf bytes.Buffer
	if err := npz.Write(&buf, m); err != nil {
		return err
	}
	return writeFile(ctx, path, buf.Bytes())
}

// LoadModel reads an .npz model from any Beam filesystem, with the memory
// budget of opt.
func LoadModel(ctx context.Context, path string, opt npz.LoadOptions) (*ndpp.Model, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	m, err := opt.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return m, nil
}

// A worker process keeps the last model, parameters and vocabulary it
// loaded for each kind, so that every DoFn or CombineFn instance of a
// process (and every bundle) shares one copy, loaded once. A new path
// replaces the old entry: the learn driver writes new parameters for each
// step, and a long-lived worker must not keep them all.
type cached[T any] struct {
	mu     sync.Mutex
	loaded bool
	path   string
	val    T
}

// get returns the value loaded from path, loading it (and dropping the
// previous entry) when it is not the one held. Callers wait for a load in
// progress; a failed load is not kept.
func (c *cached[T]) get(ctx context.Context, path string, load func(context.Context, string) (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && c.path == path {
		return c.val, nil
	}
	var zero T
	c.loaded, c.val = false, zero
	v, err := load(ctx, path)
	if err != nil {
		return zero, err
	}
	c.loaded, c.path, c.val = true, path, v
	return v, nil
}

var (
	paramsCache cached[*learn.Params]
	vocabCache  cached[*ndpp.Vocab]
)

func loadParams(ctx context.Context, path string) (*learn.Params, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	p, err := decodeParams(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return p, nil
}

func loadVocabulary(ctx context.Context, path string) (*Vocabulary, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	v, err := decodeVocabulary(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return v, nil
}

func loadVocab(ctx context.Context, path string) (*ndpp.Vocab, error) {
	v, err := loadVocabulary(ctx, path)
	if err != nil {
		return nil, err
	}
	return ndpp.NewVocab(v.Tokens)
}
