# winobs: the Windows observability bundle. `make help` lists the targets.
GO ?= go
BIN := $(CURDIR)/bin

# Every pinned external version lives in versions.json (one "key": "value"
# per line); versions_test.go checks that these reads agree with Go's.
version = $(shell sed -n 's/^ *"$(1)": *"\([^"]*\)".*/\1/p' versions.json)
VICTORIALOGS_VERSION := $(call version,victoriaLogs)
PROMTOOL_VERSION := $(call version,promtool)
PROMETHEUS_VERSION := $(call version,prometheus)
STATICCHECK_VERSION := $(call version,staticcheck)
CRDS_VERSION := $(call version,prometheusOperatorCRDs)
WINOBS_VERSION := $(call version,winobs)
ALLOY_VERSION := $(call version,alloy)

# The HostProcess images (make images). The defaults are the names the
# release workflow pushes; set both and shipper.image / alloy.image in your
# config to use your own registry (the rendered Alloy DaemonSet runs
# Grafana's published image by default). PUSH=1 pushes, otherwise OCI
# archives are written to bin/ (a Linux docker cannot load Windows images).
SHIPPER_IMAGE ?= $(call version,eventlogShipperImage)
ALLOY_IMAGE ?= $(call version,alloyHostProcessImage)
PUSH ?= 0
image_output = $(if $(filter 1,$(PUSH)),--push,--output type=oci,dest=$(BIN)/$(1).oci.tar)

# Packages whose code or tests start goroutines: run under the race detector
# in CI (gen and the schema checks are single-threaded).
RACE_PKGS := ./shipper/... ./internal/testkit/lokitest/...
# Packages with Windows-only files, linted for Windows too.
WINDOWS_PKGS := ./shipper/... ./cmd/eventlog-shipper/...

.PHONY: image-shipper image-alloy pin-alloy gen cluster-e2e grafana-harness powershell-harness alloy-harness loki release-gen test-loaded doctor-e2e images help generate test race lint tidy-check vet fmt-check windows winapi-check check-generated ci bench promtool-test \
	reliability update-crds print-versions

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

generate: ## render the committed bundle into manifests/, and the rule tests' second configuration into tests/second/bundle
	$(GO) run ./cmd/gen --out manifests
	$(GO) run ./cmd/gen --config tests/second/config.yaml --out tests/second/bundle

# Tests assert behaviour, never speed; the timeout only ends a real stall
# (go test's default of 10 minutes a package is short on a busy machine).
TEST_TIMEOUT ?= 45m

# Grafana's own frontend code for the dashboards test (tests/grafana/README.md):
# npm ci from the committed lockfile, again only when the lockfile changes.
ALLOY_HARNESS := $(BIN)/alloyharness-$(call version,alloyHarness)
$(ALLOY_HARNESS): tests/alloy/build.sh scripts/module-copy.sh tests/alloy/harness/main.go versions.json
	tests/alloy/build.sh $@ $(call version,alloyHarness)
alloy-harness: $(ALLOY_HARNESS) ## build the Alloy harness from Alloy's module (tests/alloy; make test does it)

# A real Loki, built from the Go module proxy in a scratch copy of its own
# module and run by tests as a separate process (AGPL: never a dependency).
LOKI := $(BIN)/loki-$(call version,loki)
$(LOKI): tests/loki/build.sh scripts/module-copy.sh versions.json
	tests/loki/build.sh $@ $(call version,loki)
loki: $(LOKI) ## build the real Loki the Loki rule tests and the shipper's stream-limit test run (tests/loki; make test does it)

# The cluster in a box (tests/cluster): a real control plane from Go modules,
# kwok for the nodes, prometheus-operator and Prometheus. Not in make test:
# its first build is about 35 CPU-minutes.
CLUSTER_BIN := $(BIN)/cluster-$(call version,kubernetes)-$(call version,etcd)-$(call version,kwok)
OPERATOR_BIN := $(BIN)/prometheus-operator-$(call version,prometheusOperator)-client-$(call version,prometheusOperatorClient)
$(CLUSTER_BIN)/.built: tests/cluster/build.sh versions.json
	tests/cluster/build.sh $(CLUSTER_BIN) $(call version,kubernetes) $(call version,etcd) $(call version,kwok)
	@touch $@
$(OPERATOR_BIN)/.built: tests/cluster/build-operator.sh versions.json
	tests/cluster/build-operator.sh $(OPERATOR_BIN) $(call version,prometheusOperator) $(call version,prometheusOperatorClient)
	@touch $@
cluster-e2e: $(CLUSTER_BIN)/.built $(OPERATOR_BIN)/.built $(BIN)/prometheus ## the bundle on a real control plane with kwok's Windows and Linux nodes, selected by a real prometheus-operator, scraped and evaluated by a real Prometheus, checked by gen doctor (tests/cluster)
	WINOBS_CLUSTER_BIN=$(CLUSTER_BIN) WINOBS_OPERATOR_BIN=$(OPERATOR_BIN) WINOBS_PROMETHEUS=$(BIN)/prometheus WINOBS_REQUIRE_CLUSTER=1 \
		$(GO) test ./tests/cluster/ -count=1 -v -timeout 40m

GRAFANA_HARNESS := tests/grafana/node_modules/.winobs-installed
$(GRAFANA_HARNESS): tests/grafana/package-lock.json tests/grafana/package.json
	cd tests/grafana && npm ci --no-audit --no-fund
	@touch $@

grafana-harness: $(GRAFANA_HARNESS) ## install the Grafana harness (npm ci in tests/grafana; make test does it)

# tree-sitter's PowerShell grammar for the node steps' scripts (a wasm
# parser: --ignore-scripts builds nothing native).
POWERSHELL_HARNESS := tests/powershell/node_modules/.winobs-installed
$(POWERSHELL_HARNESS): tests/powershell/package-lock.json tests/powershell/package.json
	cd tests/powershell && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

powershell-harness: $(POWERSHELL_HARNESS) ## install the PowerShell parser (npm ci in tests/powershell; make test does it)

# With the harness installed, its tests must run: a missing module fails them.
test: $(BIN)/victoria-logs $(GRAFANA_HARNESS) $(POWERSHELL_HARNESS) $(ALLOY_HARNESS) $(LOKI) ## run every test (rule unit tests on Prometheus' engine and on a real Loki, schema checks, dashboards through Grafana's code, the node steps through a PowerShell parser and shipper end-to-end tests included)
	@start=$$(date +%s); WINOBS_REQUIRE_GRAFANA=1 WINOBS_REQUIRE_POWERSHELL=1 WINOBS_REQUIRE_ALLOY=1 WINOBS_REQUIRE_LOKI=1 $(GO) test -timeout $(TEST_TIMEOUT) ./... && echo "make test: passed in $$(( $$(date +%s) - start )) s"

# The real-Loki tests run the shipper's binary, not the test process's
# goroutines: the race detector has nothing to add to them, make test runs them.
RACE_SKIP := RealLoki

race: $(BIN)/victoria-logs ## the packages with goroutines under the race detector
	$(GO) test -race -timeout $(TEST_TIMEOUT) -skip '$(RACE_SKIP)' $(RACE_PKGS)

# Busy processes per core for the loaded runs: twice the cores, so the tests
# get a third of the machine or less.
LOAD_PER_CORE ?= 2
busy = sh scripts/busy.sh $$(( $$(nproc) * $(LOAD_PER_CORE) ))

test-loaded: $(BIN)/victoria-logs $(GRAFANA_HARNESS) $(POWERSHELL_HARNESS) $(ALLOY_HARNESS) $(LOKI) ## make test while other processes keep every core busy: no verdict may depend on the machine's speed
	WINOBS_REQUIRE_GRAFANA=1 WINOBS_REQUIRE_POWERSHELL=1 WINOBS_REQUIRE_ALLOY=1 WINOBS_REQUIRE_LOKI=1 $(busy) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

race-loaded: $(BIN)/victoria-logs ## make race under the same load (CI runs this: the shipper and the Loki model, raced and starved)
	$(busy) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -skip '$(RACE_SKIP)' $(RACE_PKGS)

gen: ## build bin/gen: scripts and CI call it, so its exit codes (2 config error, 1 --check differs or doctor fails) reach them; go run turns every failure into 1
	$(GO) build -o $(BIN)/gen ./cmd/gen

# The gen binaries a release attaches, next to the images.
GEN_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
release-gen: ## cross-build gen for every platform in GEN_PLATFORMS into bin/release/ (with SHA256SUMS)
	@rm -rf $(BIN)/release && mkdir -p $(BIN)/release
	@for p in $(GEN_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "gen $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -o $(BIN)/release/gen-$(WINOBS_VERSION)-$$os-$$arch$$ext ./cmd/gen || exit 1; \
	done
	cd $(BIN)/release && sha256sum gen-* > SHA256SUMS

# The stamp file names the version, so a change in versions.json reinstalls.
$(BIN)/victoria-logs: $(BIN)/.victoria-logs-$(VICTORIALOGS_VERSION)
$(BIN)/.victoria-logs-$(VICTORIALOGS_VERSION):
	CGO_ENABLED=0 GOBIN=$(BIN) $(GO) install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@$(VICTORIALOGS_VERSION)
	@rm -f $(BIN)/.victoria-logs-* && touch $@

$(BIN)/staticcheck: $(BIN)/.staticcheck-$(STATICCHECK_VERSION)
$(BIN)/.staticcheck-$(STATICCHECK_VERSION):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@rm -f $(BIN)/.staticcheck-* && touch $@

lint: $(BIN)/staticcheck tidy-check ## staticcheck (Linux, and Windows for the shipper) and a go mod tidy check
	$(BIN)/staticcheck -checks all ./...
	GOOS=windows $(BIN)/staticcheck -checks all $(WINDOWS_PKGS)

tidy-check: ## fail if go mod tidy would change go.mod or go.sum
	$(GO) mod tidy -diff

vet: ## go vet
	$(GO) vet ./...

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

windows: ## build and vet everything for Windows
	GOOS=windows $(GO) build ./...
	GOOS=windows $(GO) vet ./...

winapi-check: ## hold the shipper's wevtapi constants, EVT_VARIANT and call arities to mingw-w64's winevt.h (needs mingw-w64-x86-64-dev)
	WINOBS_REQUIRE_MINGW=1 $(GO) test -count=1 -run 'Headers|Layout|Prototypes' ./shipper/wineventlog/

check-generated: ## fail if manifests/ or tests/second/bundle differs from a fresh render
	$(GO) run ./cmd/gen --out manifests --check
	$(GO) run ./cmd/gen --config tests/second/config.yaml --out tests/second/bundle --check

ci: fmt-check test race-loaded vet lint windows winapi-check check-generated ## what CI runs

# A benchmark that fails must fail the target, though its output goes through tee.
# The records benchmark runs three times per size, each in a process of its own: its ratio moves between
# processes (0.32-0.37 at 50 nodes on one machine), and runs after the first in one process measured otherwise
# (-count 3: 0.33, then 0.36 and 0.37, kube-prometheus-stack's records faster). The table shows the median and the range.
# The 1,000-node records run holds the fleet's TSDB (about 10 GiB): alone, under a soft memory limit.
FLEET_MEMLIMIT ?= 14GiB
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: $(BIN)/victoria-logs $(LOKI) ## benchmarks, ending with one table (also docs/performance.md): records vs kube-prometheus-stack's at 50, 200 and 1,000 nodes, dashboards, shipper events/s, allocs, RSS, binary size, event streams a node on the real Loki, doctor at 1,000 nodes, gen's build CPU and render time
	@mkdir -p $(BIN)
	{ $(GO) test -run '^$$' -bench RuleEvaluation -benchmem -benchtime 10x -timeout 60m -v ./tests/ && \
	  for size in '^nodes=50$$' '^nodes=200$$' 'linux'; do for run in 1 2 3; do \
	    $(GO) test -run '^$$' -bench "RecordsVs/$$size" -benchtime 15x -timeout 60m -v ./tests/ || exit 1; done; done && \
	  for run in 1 2 3; do \
	    GOMEMLIMIT=$(FLEET_MEMLIMIT) $(GO) test -run '^$$' -bench 'RecordsVs/^nodes=1000$$' -benchtime 5x -timeout 60m -v ./tests/ || exit 1; done && \
	  $(GO) test -run '^$$' -bench DashboardsVs -benchtime 3x -timeout 30m -v ./tests/ && \
	  $(GO) test -run '^$$' -bench ShipperBinary -benchtime 5x ./shipper/ && \
	  $(GO) test -run '^$$' -bench ShipperIntoLoki -benchtime 1x ./shipper/ && \
	  WINOBS_REQUIRE_LOKI=1 $(GO) test -run '^$$' -bench FleetStreams -benchtime 1x ./shipper/ && \
	  WINOBS_REQUIRE_LOKI=1 $(GO) test -run '^$$' -bench DoctorAtFleetSize -benchtime 1x ./gen/doctor/ && \
	  $(GO) test -run '^$$' -bench 'FormatBatchEncode|ParseLine|DumpQuery' -benchmem -cpu 1 ./shipper/ ./shipper/eventxml/ && \
	  $(GO) test -run '^$$' -bench GenBuild -benchtime 1x -timeout 30m ./cmd/gen/; } | tee $(BIN)/bench.txt
	$(GO) run ./scripts/benchtable < $(BIN)/bench.txt > docs/performance.md
	@cat docs/performance.md

reliability: $(BIN)/victoria-logs ## eventlog-shipper fault and bad-input suite at full length; writes docs/reliability.md
	$(GO) test ./shipper/ -run 'Reliability' -count=1 -timeout 60m -v -args -reliability.long -reliability.report=$(CURDIR)/docs/reliability.md
	$(GO) test ./shipper/eventxml/ -run '^$$' -fuzz FuzzLine -fuzztime 2m

# The stamp file names the version, so a change in versions.json rebuilds.
$(BIN)/prometheus: $(BIN)/.prometheus-$(PROMETHEUS_VERSION)
$(BIN)/.prometheus-$(PROMETHEUS_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)
	@rm -f $(BIN)/.prometheus-* && touch $@

doctor-e2e: $(BIN)/prometheus ## gen doctor against a real Prometheus scraping healthy and broken fixtures (builds Prometheus: ~10 CPU-minutes the first time)
	WINOBS_PROMETHEUS=$(BIN)/prometheus $(GO) test ./gen/doctor/ -run RealPrometheus -count=1 -v -timeout 15m

promtool-test: ## run tests/*.yaml with real promtool 3.x (slow: ~10 CPU-minutes to build)
	GOBIN=$(BIN) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	cd tests && ../bin/promtool test rules *.yaml

update-crds: ## refresh testdata/crds from the prometheus-operator module named in versions.json
	@dir=$$($(GO) mod download -json github.com/prometheus-operator/prometheus-operator@$(CRDS_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$dir" || { echo "go mod download failed"; exit 1; }; \
	for k in podmonitors servicemonitors prometheusrules; do \
		install -m 644 "$$dir/example/prometheus-operator-crd/monitoring.coreos.com_$$k.yaml" testdata/crds/; done

images: image-shipper image-alloy ## build the shipper and Alloy HostProcess images with docker buildx (windows/amd64; PUSH=1 pushes)

# buildx's default driver cannot write Windows images to OCI archives.
buildx_check = @mkdir -p $(BIN); driver=$$(docker buildx inspect 2>/dev/null | sed -n 's/^Driver: *//p' | head -1); \
	if [ "$(PUSH)" != 1 ] && [ "$$driver" = docker ]; then \
		echo "make $@: buildx's default 'docker' driver cannot write OCI archives of Windows images."; \
		echo "Run first:  docker buildx create --name winobs --driver docker-container --use"; \
		echo "(or PUSH=1 with a registry you are logged in to)"; exit 2; fi

image-shipper: ## build the eventlog-shipper's HostProcess image (PUSH=1 pushes it to SHIPPER_IMAGE)
	$(buildx_check)
	docker buildx build --platform windows/amd64 -f images/eventlog-shipper/Dockerfile \
		--build-arg GO_IMAGE=$(call version,goImage) --build-arg BASE_IMAGE=$(call version,hostProcessBaseImage) \
		--build-arg VERSION=$(WINOBS_VERSION) -t $(SHIPPER_IMAGE) $(call image_output,eventlog-shipper) .

image-alloy: ## build the Alloy HostProcess image from the pinned release zip (images/alloy/pins; PUSH=1 pushes it to ALLOY_IMAGE)
	@images/alloy/pinned.sh $(ALLOY_VERSION) >/dev/null || exit 2
	$(buildx_check)
	docker buildx build --platform windows/amd64 -f images/alloy/Dockerfile \
		--build-arg FETCH_IMAGE=$(call version,fetchImage) --build-arg BASE_IMAGE=$(call version,hostProcessBaseImage) \
		--build-arg ALLOY_VERSION=$(ALLOY_VERSION) --build-arg ALLOY_ZIP_SHA256=$$(images/alloy/pinned.sh $(ALLOY_VERSION)) \
		-t $(ALLOY_IMAGE) $(call image_output,alloy-hostprocess) images/alloy

pin-alloy: ## record the SHA-256 of versions.json's Alloy Windows zip in images/alloy/pins (needs GitHub; review and commit it)
	@set -eu; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	url=https://github.com/grafana/alloy/releases/download/$(ALLOY_VERSION); \
	curl -fsSL --proto '=https' -o "$$d/alloy-windows-amd64.exe.zip" "$$url/alloy-windows-amd64.exe.zip"; \
	curl -fsSL --proto '=https' -o "$$d/SHA256SUMS" "$$url/SHA256SUMS"; \
	grep ' alloy-windows-amd64.exe.zip$$' "$$d/SHA256SUMS" > "$$d/pin"; \
	(cd "$$d" && sha256sum -c pin); \
	install -m 644 "$$d/pin" images/alloy/pins/$(ALLOY_VERSION).sha256; \
	echo "pinned: $$(cat images/alloy/pins/$(ALLOY_VERSION).sha256); compare with the release page, then commit it"

print-versions: ## the versions this Makefile read from versions.json
	@echo winobs=$(WINOBS_VERSION)
	@echo eventlogShipperImage=$(SHIPPER_IMAGE)
	@echo alloyHostProcessImage=$(ALLOY_IMAGE)
	@echo victoriaLogs=$(VICTORIALOGS_VERSION)
	@echo promtool=$(PROMTOOL_VERSION)
	@echo prometheus=$(PROMETHEUS_VERSION)
	@echo staticcheck=$(STATICCHECK_VERSION)
	@echo prometheusOperatorCRDs=$(CRDS_VERSION)
	@echo prometheusOperator=$(call version,prometheusOperator)
	@echo prometheusOperatorClient=$(call version,prometheusOperatorClient)
