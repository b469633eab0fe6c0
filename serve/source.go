package serve

import (
	"context"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// A Source is where a Handler gets its model: New loads it once, and each
// Reload loads it again. A Source may be called from several goroutines,
// one call at a time.
type Source interface {
	// Load returns the model to serve. It is only read from then on, and
	// requests that took it finish with it after a reload.
	Load(ctx context.Context) (*ndpp.Model, error)
	// Name names the model in /v1/model's "file" and in log lines (a
	// file's path).
	Name() string
}

// File returns the Source of the model file at path, read by o.Load
// (npz.LoadOptions: o.MaxBytes is the memory budget of decoding) with
// o.CheckScale set, so that a file whose kernel overflows is refused.
func File(path string, o npz.LoadOptions) Source {
	o.CheckScale = true
	return fileSource{path: path, o: o}
}

type fileSource struct {
	path string
	o    npz.LoadOptions
}

func (f fileSource) Name() string { return f.path }

func (f fileSource) Load(ctx context.Context) (*ndpp.Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.o.Load(f.path)
}

// Static returns the Source of a model built in memory, named name; a
// reload serves it again.
func Static(name string, m *ndpp.Model) Source { return staticSource{name: name, m: m} }

type staticSource struct {
	name string
	m    *ndpp.Model
}

func (s staticSource) Name() string                              { return s.name }
func (s staticSource) Load(context.Context) (*ndpp.Model, error) { return s.m, nil }
