# kop-offsets: the two commands that matter are `make demo` and `make test`.
GO        ?= go
PKG       := github.com/kop-offsets/kop-offsets
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) \
             -X $(PKG)/internal/buildinfo.Commit=$(COMMIT) -X $(PKG)/internal/buildinfo.Date=$(DATE)

.PHONY: all build unit race test e2e demo fmt vet clean help

all: build

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/kop-offsets and bin/kop-lab
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/kop-offsets ./cmd/kop-offsets
	$(GO) build -o bin/kop-lab ./cmd/kop-lab

fmt: ## gofmt check (fails when a file is not formatted)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet, all build tags
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

unit: fmt vet ## fast tier: unit tests, no JVM (seconds)
	$(GO) test -count=1 ./...

race: ## unit tests under the race detector
	$(GO) test -race -count=1 ./...

e2e: build ## end-to-end tests on the real two-cluster lab (starts it, stops it)
	$(GO) test -count=1 -tags e2e -timeout 45m -p 1 ./...

test: unit race e2e ## everything CI runs

demo: build ## the user's story on the built-in lab, narrated (starts the lab, leaves it running)
	scripts/demo.sh

# ---- the lab (internal/lab, cmd/kop-lab; docs/lab.md) ----
.PHONY: kop-lab-bin lab-up lab-down lab-status lab-clean e2e-lab

kop-lab-bin:
	$(GO) build -o bin/kop-lab ./cmd/kop-lab

lab-up: kop-lab-bin ## start (or reuse) the two-cluster lab and leave it running (KOP=off|auto|required)
	KOP_LAB_KEEP=1 bin/kop-lab up

lab-down: kop-lab-bin ## stop the lab's JVMs by pid (data stays in lab/run)
	bin/kop-lab down

lab-status: kop-lab-bin ## pid, RSS, ports, health, KoP on/off and why, per cluster
	bin/kop-lab status

lab-clean: kop-lab-bin ## stop the lab, delete cluster data/logs/config.yaml (keeps the unpacked Pulsar)
	bin/kop-lab clean

e2e-lab: ## the lab's own e2e tests: reuse a running lab, else start one and stop it after the run
	$(GO) test -count=1 -tags e2e -timeout 20m -p 1 ./internal/lab/...

clean: ## remove build output (not the lab's data: see lab-down / lab-clean)
	rm -rf bin dist
