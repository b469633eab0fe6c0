package npz_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// Save writes a model atomically; Load reads it back bit for bit. The same
// files are read and written by numpy (numpy.load, numpy.savez).
func ExampleSave() {
	dir, err := os.MkdirTemp("", "npz-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.npz")

	voc, _ := ndpp.NewVocab([]string{"milk", "bread", "eggs"})
	m, err := ndpp.NewFromRows(3, 2,
		[]float64{1, 0, 0, 1, 0.5, 0.5}, // V, a row per item
		nil,                             // B = V
		[]float64{0, 0.3, -0.3, 0},      // C, skew-symmetric
		ndpp.WithVocab(voc))
	if err != nil {
		log.Fatal(err)
	}
	if err := npz.Save(path, m); err != nil {
		log.Fatal(err)
	}
	back, err := npz.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	row, _ := back.Vocab().Lookup("eggs")
	fmt.Println(back.N(), back.D(), back.Shared(), row, back.Entry(0, 1) == m.Entry(0, 1))
	// Output: 3 2 true 2 true
}

// Load reports what is wrong with a file and which file it is.
func ExampleLoad() {
	_, err := npz.Load("no/such/model.npz")
	fmt.Println(err)
	m, err := npz.Load("../../testdata/numpy-model.npz") // written in numpy.savez's format
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.N(), m.D(), m.Shared())
	// Output:
	// npz: open no/such/model.npz: no such file or directory
	// 12 3 false
}
