package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// TestLearnedItemsKeepTheirType: a model learned from a file of integer
// ids records ids (--tokens auto and int, both modes), and serve answers
// with integers; with --tokens any, or string tokens, the model records a
// vocabulary and serve answers strings; a model with neither answers row
// indices.
func TestLearnedItemsKeepTheirType(t *testing.T) {
	data := smallApparel(t, 400)
	dir := t.TempDir()
	learnModel := func(name string, args ...string) *ndpp.Model {
		t.Helper()
		out := filepath.Join(dir, name+".npz")
		args = append([]string{"learn", "--data", data, "--d", "2", "--val", "20", "--test", "40", "--quiet", "--out", out}, args...)
		code, _, errs := runCmd(t, "", args...)
		require.Equal(t, 0, code, errs)
		m, err := npz.Load(out)
		require.NoError(t, err)
		return m
	}
	for _, args := range [][]string{{"--mode", "online"}, {"--mode", "offline", "--epochs", "1"}, {"--mode", "online", "--tokens", "int"}} {
		m := learnModel("ids", args...)
		require.NotNil(t, m.IDs(), "%v", args)
		require.Nil(t, m.Vocab(), "%v", args)
		require.True(t, m.IntItems())
	}
	m := learnModel("any", "--mode", "online", "--tokens", "any")
	require.Nil(t, m.IDs())
	require.NotNil(t, m.Vocab())

	// serve: the item of a one-item recommendation, for each kind of model.
	recommendOne := func(path string, basket string) json.RawMessage {
		t.Helper()
		url := testServer(t, path)
		var rec recommendation
		status, raw := post(t, url+"/v1/recommend", `{"basket": `+basket+`, "n": 1}`, &rec)
		require.Equal(t, http.StatusOK, status, raw)
		require.Len(t, rec.Items, 1)
		return rec.Items[0]
	}
	idsModel := learnModel("ids-served", "--mode", "online")
	tok := idsModel.Token(0)
	item := recommendOne(filepath.Join(dir, "ids-served.npz"), `[`+tok+`]`)
	id, err := strconv.ParseInt(string(item), 10, 64)
	require.NoError(t, err, "ids model answered %s, want a JSON integer", item)
	_, ok := idsModel.RowOfID(id)
	require.True(t, ok)
	// A JSON string naming an id is accepted too.
	_ = recommendOne(filepath.Join(dir, "ids-served.npz"), `["`+tok+`"]`)

	item = recommendOne(filepath.Join(dir, "any.npz"), `["`+m.Token(0)+`"]`)
	var s string
	require.NoError(t, json.Unmarshal(item, &s), "vocabulary model answered %s, want a JSON string", item)
	_, ok = m.Row(s)
	require.True(t, ok)

	// Neither ids nor vocabulary: rows, as integers.
	rows := ndpp.Random(10, 2, 3, ndpp.RandomOptions{Diag: 0.5})
	rowsPath := filepath.Join(dir, "rows.npz")
	require.NoError(t, npz.Save(rowsPath, rows))
	item = recommendOne(rowsPath, `[0]`)
	r, err := strconv.Atoi(string(item))
	require.NoError(t, err, "rows model answered %s, want a JSON integer", item)
	require.True(t, r > 0 && r < 10)
	require.NoError(t, os.Remove(rowsPath))
}
