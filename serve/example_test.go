package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/serve"
)

// A Go service mounts the endpoints under /ndpp/ of its own mux, beside
// its own routes, and runs its own server with Run, which drains when the
// context is done (in a service, signal.NotifyContext's context for
// SIGTERM).
func Example() {
	m := ndpp.Random(1000, 30, 1, ndpp.RandomOptions{Diag: 0.05})
	src := serve.Static("random", m) // or serve.File("m.npz", npz.LoadOptions{}), which Reload reads again
	o := serve.DefaultOptions()
	o.DrainDelay = 0 // the default 5 s lets load balancers see /readyz turn 503
	h, err := serve.New(context.Background(), src, o)
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mux.Handle("/ndpp/", http.StripPrefix("/ndpp", h))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- serve.Run(ctx, ln, h, serve.RunOptions{Server: &http.Server{Handler: mux}}) }()

	url := "http://" + ln.Addr().String()
	for _, req := range []struct{ path, body string }{
		{"/hello", ""},
		{"/ndpp/v1/rerank", `{"candidates": [3, 17, 42, 99, 500, 731], "quality": [1, 0.5, 2, 1, 1, 0.1], "shown": [17], "k": 3}`},
		{"/ndpp/v1/rerank", `{"candidates": [3, 3], "k": 1}`},
	} {
		var resp *http.Response
		if req.body == "" {
			resp, err = http.Get(url + req.path)
		} else {
			resp, err = http.Post(url+req.path, "application/json", strings.NewReader(req.body))
		}
		if err != nil {
			log.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res struct {
			Items []int     `json:"items"`
			Gains []float64 `json:"gains"`
			Error string    `json:"error"`
		}
		switch {
		case json.Unmarshal(out, &res) != nil:
			fmt.Print(resp.StatusCode, " ", string(out))
		case res.Error != "":
			fmt.Println(resp.StatusCode, res.Error)
		default:
			fmt.Printf("%d items %v gains %.4f\n", resp.StatusCode, res.Items, res.Gains)
		}
	}
	stop()
	fmt.Println("stopped:", <-ran)
	// Output:
	// 200 hello
	// 200 items [42 500 3] gains [5.5179 1.2681 1.2176]
	// 400 candidates[1]: item "3" repeats candidates[0]
	// stopped: <nil>
}
