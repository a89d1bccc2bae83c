# kop-offsets: the two commands that matter are `make demo` and `make test`.
GO        ?= go
PKG       := github.com/kop-offsets/kop-offsets
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) \
             -X $(PKG)/internal/buildinfo.Commit=$(COMMIT) -X $(PKG)/internal/buildinfo.Date=$(DATE)

.PHONY: all build unit race test e2e e2e-kop demo fmt vet clean help bench bench-lab

# The lab's knobs reach kop-lab, the e2e tests and the demo through the environment, whether
# they are set there or on make's command line (docs/lab.md): KOP_NAR=/path/to/kop.nar loads
# that KoP protocol handler; PULSAR_VERSION picks the Pulsar distribution (default 4.0.8);
# KOP_LAB_BROKERS=N (default 1: standalones) and KOP_LAB_CLUSTERS=3 (default 2) pick the lab's
# shape; KOP_LAB_PORT_OFFSET moves its ports; KOP_LAB_AUTH=token starts the lab with token
# auth, TLS and KoP's SASL/PLAIN (default none).
export KOP_NAR PULSAR_VERSION KOP KOP_VERSION KOP_LAB_BROKERS KOP_LAB_CLUSTERS KOP_LAB_PORT_OFFSET KOP_LAB_AUTH

all: build

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/kop-offsets and bin/kop-lab
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/kop-offsets ./cmd/kop-offsets
	$(GO) build -o bin/kop-lab ./cmd/kop-lab

fmt: ## gofmt check (fails when a file is not formatted)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet, all build tags
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(GO) vet -tags kop ./acceptance/kop/
	$(GO) vet -tags topology ./internal/lab/
	$(GO) vet -tags deploy ./deploy/
	$(GO) vet -tags topology ./acceptance/topology/
	$(GO) vet -tags three ./acceptance/three/

unit: fmt vet ## fast tier: unit tests, no JVM (seconds)
	$(GO) test -count=1 ./...

race: ## unit tests under the race detector
	$(GO) test -race -count=1 ./...

e2e: build ## end-to-end tests on the real two-cluster lab (starts it, stops it; on KoP with KOP_NAR)
	$(GO) test -count=1 -tags e2e -timeout 45m -p 1 ./...

e2e-kop: ## the KoP suite: the user's story and KoP's facts through real Kafka clients (needs KOP_NAR)
	scripts/e2e-kop.sh

test: unit lint race release-ci deploy-ci e2e $(if $(KOP_NAR),e2e-kop) ## everything CI runs (with KOP_NAR: on KoP, plus the KoP suite)

bench: ## decode and replay microbenchmarks beside plain copying of the same bytes (one run)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./internal/offsetlog/ ./internal/loader/

BENCH_ARGS ?=
bench-lab: build ## persisted-side (and, with KoP, cached-side) figures at two sizes on the lab, beside references (docs/performance.md)
	$(GO) build -o bin/benchlab ./tools/benchlab
	bin/benchlab run $(BENCH_ARGS)

demo: build ## the user's story on the lab, narrated (starts the lab, leaves it running; whole with KOP_NAR)
	scripts/demo.sh

# ---- the lab (internal/lab, cmd/kop-lab; docs/lab.md) ----
.PHONY: kop-lab-bin lab-up lab-down lab-status lab-clean e2e-lab e2e-topology e2e-three e2e-auth e2e-auth-brokers

kop-lab-bin:
	$(GO) build -o bin/kop-lab ./cmd/kop-lab

lab-up: kop-lab-bin ## start (or reuse) the lab and leave it running (KOP_NAR=file, KOP=off|auto|required, KOP_LAB_BROKERS=N, KOP_LAB_CLUSTERS=3)
	KOP_LAB_KEEP=1 bin/kop-lab up

lab-down: kop-lab-bin ## stop the lab's JVMs by pid (data stays in lab/run)
	bin/kop-lab down

lab-status: kop-lab-bin ## every process (role, pid, RSS, ports), health, KoP on/off and why, per cluster
	bin/kop-lab status

lab-clean: kop-lab-bin ## stop the lab, delete cluster data/logs/config.yaml (keeps the unpacked Pulsar)
	bin/kop-lab clean

e2e-lab: ## the lab's own e2e tests: reuse a running lab, else start one and stop it after the run
	$(GO) test -count=1 -tags e2e -timeout 20m -p 1 ./internal/lab/... ./internal/testsupport/labtest/... ./acceptance/share/ ./acceptance/auth/

# Not part of `make test` (CI): a multi-broker lab takes minutes to start on 2 shared cores and
# 2 to 3 GB of memory (docs/lab.md). KOP_LAB_BROKERS defaults to 2 here; KOP_LAB_CLUSTERS=3
# adds eus.
e2e-topology: ## the multi-broker lab's tests (tag topology): starts the lab with KOP_LAB_BROKERS=2 unless set, stops it after
	KOP_LAB_BROKERS=$(or $(KOP_LAB_BROKERS),2) $(GO) test -count=1 -tags topology -timeout 60m -p 1 -v -run '^TestTopology' ./internal/lab/ ./acceptance/topology/

e2e-three: build ## the user's story on three clusters with KoP (tag three): starts the lab with KOP_LAB_CLUSTERS=3, stops it after (needs KOP_NAR)
	KOP_LAB_CLUSTERS=3 $(GO) test -count=1 -tags three -timeout 60m -p 1 -v ./acceptance/three/

# A longer start timeout than the default 4 minutes: on 2 cores at load average 30 (other labs
# running) the auth lab with KoP took 4m24s to healthy, and a first try failed at 4m.
e2e-auth: ## the auth lab's e2e tests (KOP_LAB_AUTH=token; with KOP_NAR also KoP's SASL/PLAIN; KOP_LAB_BROKERS=2 for several brokers): not part of make test
	KOP_LAB_AUTH=token KOP_LAB_START_TIMEOUT=$${KOP_LAB_START_TIMEOUT:-10m} $(GO) test -count=1 -tags e2e -timeout 30m -p 1 -v ./acceptance/auth/

# The same suite on two brokers per cluster (TestSeveralBrokersDoctorLocateReload runs only
# there): a 2x2 auth lab with KoP took 4m15s to start at load average 34 (docs/lab.md).
e2e-auth-brokers: ## the auth suite on the 2x2 auth lab (KOP_LAB_BROKERS=2 unless set; needs KOP_NAR): not part of make test
	KOP_LAB_BROKERS=$(or $(KOP_LAB_BROKERS),2) KOP_LAB_AUTH=token KOP_LAB_START_TIMEOUT=$${KOP_LAB_START_TIMEOUT:-15m} $(GO) test -count=1 -tags e2e -timeout 45m -p 1 -v ./acceptance/auth/

clean: ## remove build output (not the lab's data or the pinned tools: see lab-clean)
	rm -rf bin/kop-offsets bin/kop-lab dist build completions manpages

# ---- tools, lint, docs, release (issue 8) ----
TOOLS_DIR  ?= bin/tools
GOLANGCI   := $(TOOLS_DIR)/golangci-lint
GORELEASER := $(TOOLS_DIR)/goreleaser

.PHONY: tools lint docs release-assets release-check release-snapshot release-ci smoke

tools: ## install the pinned golangci-lint and goreleaser into bin/tools (skipped when present)
	TOOLS_DIR=$(TOOLS_DIR) scripts/tools.sh

lint: tools ## golangci-lint with .golangci.yml: all packages, tests and e2e-tagged files
	$(GOLANGCI) run ./...

docs: ## regenerate the CLI reference docs/cli/*.md from the command tree (commit the result)
	$(GO) run ./cmd/docgen -markdown docs/cli

release-assets: ## completions/ and manpages/ (what the archives and packages ship)
	scripts/release-assets.sh

release-check: tools ## validate .goreleaser.yml
	$(GORELEASER) check

release-snapshot: tools ## snapshot release into dist/, all platforms (RELEASE_CI=1: linux/amd64 only)
	GORELEASER=$(GORELEASER) scripts/release-snapshot.sh $(if $(RELEASE_CI),--ci)

smoke: ## smoke-test the snapshot's binary, archive and .deb for this machine
	scripts/smoke.sh

release-ci: release-check ## what CI runs: goreleaser check, linux/amd64 snapshot with its image, smoke test, image check
	TOOLS_DIR=$(TOOLS_DIR) scripts/tools.sh podman
	GORELEASER=$(GORELEASER) scripts/release-snapshot.sh --ci
	scripts/smoke.sh
	scripts/image-check.sh

image-check: ## the snapshot's container image: layout, entrypoint, user, files, its binary (deploy/image_test.go)
	scripts/image-check.sh

# ---- deployment: Helm chart, alert rules (deploy/; the dashboard's test runs in unit) ----
.PHONY: deploy-ci chart-check rules-check image-check
HELM     := $(TOOLS_DIR)/helm
PROMTOOL := $(TOOLS_DIR)/promtool

deploy-ci: chart-check rules-check ## what CI runs for deploy/: helm lint and template, promtool check and test

chart-check: ## helm lint --strict and helm template of deploy/helm/kop-offsets, asserted by deploy/chart_test.go
	@TOOLS_DIR=$(TOOLS_DIR) scripts/tools.sh helm
	HELM=$(abspath $(HELM)) $(GO) test -tags deploy -count=1 -run '^TestChart' ./deploy/

rules-check: ## promtool check rules and promtool test rules of deploy/prometheus
	@TOOLS_DIR=$(TOOLS_DIR) scripts/tools.sh promtool
	$(PROMTOOL) check rules deploy/prometheus/kop-offsets.rules.yml
	cd deploy/prometheus && $(abspath $(PROMTOOL)) test rules kop-offsets.rules.test.yml
