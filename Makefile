# ndpp build and test targets. `make test` is the project's test command.
GO ?= go
PKGS := ./...
HAVE_OPENBLAS := $(shell pkg-config --exists openblas lapacke 2>/dev/null && echo yes)

.PHONY: build build-openblas test test-gonum test-openblas test-noasm test-race bench bench-rerank bench-rerank-numpy bench-sample loadtest lint demo fuzz beam-build beam-tools beam-test lint-beam beam-portable-test

build:
	$(GO) build -o bin/ndpp-bench ./cmd/ndpp-bench

build-openblas:
	$(GO) build -tags openblas -o bin/ndpp-bench ./cmd/ndpp-bench

# Pure Go first, then the OpenBLAS build when the libraries are installed.
# NDPP_REQUIRE_OPENBLAS=1 turns a missing OpenBLAS into a failure (CI).
test: test-gonum test-openblas

test-gonum:
	$(GO) test $(PKGS)

test-openblas:
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) test -tags openblas $(PKGS)
else
ifeq ($(NDPP_REQUIRE_OPENBLAS),1)
	@echo "OpenBLAS/LAPACKE not found by pkg-config (apt-get install libopenblas-dev liblapacke-dev)"; exit 1
else
	@echo "SKIPPED: OpenBLAS tests (pkg-config finds no openblas/lapacke; apt-get install libopenblas-dev liblapacke-dev)"
endif
endif

# The Go twins of internal/f64's assembly kernels (as on CPUs without
# AVX2/FMA and on other architectures).
test-noasm:
	$(GO) test -tags noasm $(PKGS)

test-race:
	$(GO) test -race $(PKGS)

# Every fuzz target of the module (found by name, so that none is left
# out), FUZZTIME each (CI: 10 s; about a minute in all); see .ci/fuzz.
FUZZTIME ?= 10s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./.ci/fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) test -tags openblas -run '^$$' -bench . -benchmem $(PKGS)
endif

# The tables of rerank/BENCHMARKS.md: greedy latency over N and k, plain
# and with θ + a constraint, deadline-bounded polish answer times, and the
# latency of sampled lists (Request.Sample).
bench-rerank:
	$(GO) test -count=1 -run '^TestRerank(Sample)?Numbers$$' -v ./rerank -args -numbers
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) test -tags openblas -count=1 -run '^TestRerank(Sample)?Numbers$$' -v ./rerank -args -numbers
endif

# The table of sample/BENCHMARKS.md: the tree sampler against the linear
# one on the synthetic orthogonal kernel, n = 10⁴, 10⁵, 10⁶ (d = 50),
# alternating in one process; about 10 minutes, 3 GiB at n = 10⁶.
bench-sample:
	$(GO) test -count=1 -timeout 60m -run '^TestSampleNumbers$$' -v ./sample -args -numbers
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) test -tags openblas -count=1 -timeout 60m -run '^TestSampleNumbers$$' -v ./sample -args -numbers
endif

# The rerank greedy against a NumPy fast greedy (Chen et al. 2018) computing
# kernel rows on the fly, on the same requests in one run: the chosen sets
# must agree; prints both latencies and their ratio. Needs NumPy in
# NUMPY_PYTHON (apt-get install python3-numpy gives /usr/bin/python3).
NUMPY_PYTHON ?= /usr/bin/python3
bench-rerank-numpy:
	$(GO) test -count=1 -run '^TestNumpyGreedy$$' -v ./rerank -args -numpy.python=$(NUMPY_PYTHON)

# The serve load test at the README's size (TestServeLoad -load.full:
# catalogue 10⁴, d = 30, N = 500 candidates, k = 10, 8 clients, 20 s per
# build); `make test` runs it at a small size.
loadtest:
	$(GO) test -count=1 -run '^TestServeLoad$$' -v ./cmd/ndpp-bench -args -load.full
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) test -tags openblas -count=1 -run '^TestServeLoad$$' -v ./cmd/ndpp-bench -args -load.full
endif

# staticcheck 2026.2.2 (module version v0.8.2):
# go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
# (.ci/run installs it when missing).
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $$($(GO) env GOPATH)/bin/staticcheck)
STATICCHECK_VERSION := v0.8.2

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags openblas $(PKGS)
	$(GO) vet -tags noasm $(PKGS)
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags openblas $(PKGS)

demo:
	$(GO) run ./cmd/ndpp-bench demo

# testdata/gen/ukretail is a nested module (it reads Parquet, which the
# library does not): gen-test vets and tests it, and CI runs it.
.PHONY: gen-test
gen-test:
	cd testdata/gen/ukretail && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./...

# The Apache Beam pipelines (beam/: a nested module with its own go.mod,
# replace'd to this one, never imported by it). The Beam Go SDK is heavy —
# a cold build downloads about 0.9 GB of modules and takes minutes — so
# `make test` leaves it out; CI runs beam-test after the main tests.
beam-build:
	cd beam && $(GO) build -o ../bin/ndpp-beam ./cmd/ndpp-beam

# A Prism job server and the Go SDK's boot program, at the version
# beam/go.mod pins, for the job-server recipe of beam/README.md.
beam-tools:
	cd beam && $(GO) build -o ../bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism
	cd beam && $(GO) build -o ../bin/boot github.com/apache/beam/sdks/v2/go/container

beam-test: lint-beam
	cd beam && $(GO) build ./...
	cd beam && $(GO) test -count=1 ./...

# The three pipelines on a Prism job server started as a separate process
# (portable job API, SDK workers in PROCESS environments: no Docker),
# compared byte for byte with the in-process run (beam/scripts/portable-test;
# about a minute and a half). beam/README.md says what was run where.
beam-portable-test:
	GO=$(GO) ./beam/scripts/portable-test

lint-beam:
	@cd beam && out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	cd beam && $(GO) vet ./...
	cd beam && $(STATICCHECK) ./...
