package npz

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ndpp-go/ndpp/ndpp"
)

// LoadKernel reads what a model file says about the kernel its items share
// (d, the row-major d×d C, whether B = V and whether the model has a
// diagonal) without loading its items; the description is not validated
// (see ndpp.Kernel.Check). It decodes C only, takes the diagonal's
// presence from the entry D, and decides B = V as Load does (no B, or a B
// whose bytes equal V's: compared by the zip directory's CRC-32 and size,
// then streamed in pieces when they agree). Its memory does not grow with
// n.
func LoadKernel(path string) (ndpp.Kernel, error) {
	f, err := os.Open(path)
	if err != nil {
		return ndpp.Kernel{}, fmt.Errorf("npz: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ndpp.Kernel{}, fmt.Errorf("npz: %w", err)
	}
	if st.IsDir() {
		return ndpp.Kernel{}, fmt.Errorf("npz: %s: is a directory, not an .npz model file", path)
	}
	k, err := decodeKernel(f, st.Size())
	if err != nil {
		return ndpp.Kernel{}, &fileError{path, err}
	}
	return k, nil
}

func decodeKernel(r io.ReaderAt, size int64) (ndpp.Kernel, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return ndpp.Kernel{}, fmt.Errorf("not a valid .npz (zip) archive: %w", err)
	}
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		key := strings.TrimSuffix(f.Name, ".npy")
		switch key {
		case "V", "B", "C", "D":
			if _, dup := entries[key]; dup {
				return ndpp.Kernel{}, fmt.Errorf("array %s appears twice in the archive", key)
			}
			entries[key] = f
		}
	}
	cf, ok := entries["C"]
	if !ok {
		return ndpp.Kernel{}, errors.New("missing array C")
	}
	ca, err := readNPYEntry(cf, nil)
	if err != nil {
		return ndpp.Kernel{}, fmt.Errorf("array C: %w", err)
	}
	if len(ca.shape) != 2 || ca.shape[0] != ca.shape[1] || ca.shape[0] == 0 {
		return ndpp.Kernel{}, fmt.Errorf("array C has shape %s; want (d, d) with d ≥ 1", shapeString(ca.shape))
	}
	c, err := ca.float64s()
	if err != nil {
		return ndpp.Kernel{}, fmt.Errorf("array C: %w", err)
	}
	k := ndpp.Kernel{D: ca.shape[0], C: c, Shared: true}
	_, k.Diag = entries["D"]
	vf, hasV := entries["V"]
	if bf, ok := entries["B"]; ok {
		k.Shared = false
		if hasV && vf.CRC32 == bf.CRC32 && vf.UncompressedSize64 == bf.UncompressedSize64 {
			if k.Shared, err = sameEntries(vf, bf); err != nil {
				return ndpp.Kernel{}, err
			}
		}
	}
	return k, nil
}

// sameEntries reports whether two zip entries have the same bytes.
func sameEntries(a, b *zip.File) (bool, error) {
	ra, err := a.Open()
	if err != nil {
		return false, fmt.Errorf("array V: %w", err)
	}
	defer ra.Close()
	rb, err := b.Open()
	if err != nil {
		return false, fmt.Errorf("array B: %w", err)
	}
	defer rb.Close()
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, ea := io.ReadFull(ra, ba)
		nb, eb := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == io.EOF || eb == io.ErrUnexpectedEOF, nil
		}
		if ea != nil {
			return false, fmt.Errorf("array V: %w", ea)
		}
		if eb != nil && eb != io.EOF && eb != io.ErrUnexpectedEOF {
			return false, fmt.Errorf("array B: %w", eb)
		}
	}
}
