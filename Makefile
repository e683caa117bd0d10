# winobs: the Windows observability bundle. `make help` lists the targets.
GO ?= go
# promtool of Prometheus 3.x, for the optional cross-check of tests/*.yaml.
PROMTOOL_VERSION := v0.316.0
# A real Loki-protocol receiver for the shipper's end-to-end tests.
VICTORIALOGS_VERSION := v1.52.2
BIN := $(CURDIR)/bin

.PHONY: help generate test vet fmt-check windows check-generated ci bench promtool-test reliability

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

generate: ## render the committed bundle into manifests/
	$(GO) run ./cmd/gen --out manifests

test: $(BIN)/victoria-logs ## run every test (rule unit tests and shipper end-to-end tests included)
	$(GO) test ./...

$(BIN)/victoria-logs: Makefile
	CGO_ENABLED=0 GOBIN=$(BIN) $(GO) install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@$(VICTORIALOGS_VERSION)
	@touch $@

vet: ## go vet
	$(GO) vet ./...

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

windows: ## build and vet everything for Windows
	GOOS=windows $(GO) build ./...
	GOOS=windows $(GO) vet ./...

check-generated: ## fail if manifests/ differs from a fresh render
	$(GO) run ./cmd/gen --out manifests --check

ci: fmt-check test vet windows check-generated ## what CI runs

bench: $(BIN)/victoria-logs ## benchmarks: rule evaluation (50 nodes x 60 containers); shipper events/s, allocs/event, peak RSS, Windows binary size
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 20x ./tests/
	$(GO) test -run '^$$' -bench ShipperBinary -benchtime 5x ./shipper/
	$(GO) test -run '^$$' -bench 'FormatBatchEncode|ParseLine' -benchmem -cpu 1 ./shipper/ ./shipper/eventxml/

reliability: $(BIN)/victoria-logs ## eventlog-shipper fault and bad-input suite at full length; writes docs/reliability.md
	$(GO) test ./shipper/ -run 'Reliability' -count=1 -timeout 60m -v -args -reliability.long -reliability.report=$(CURDIR)/docs/reliability.md
	$(GO) test ./shipper/eventxml/ -run '^$$' -fuzz FuzzLine -fuzztime 2m

promtool-test: ## run tests/*.yaml with real promtool 3.x (slow: ~10 CPU-minutes to build)
	GOBIN=$(BIN) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	cd tests && ../bin/promtool test rules *.yaml
