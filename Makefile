# relayr's build. Every target spans the modules go.work lists (Go's `work`
# pattern); no list of modules is kept here by hand.

SHELL := /bin/bash
GO ?= go
GOLANGCI_LINT_VERSION := v2.15.0
GOBIN := $(shell $(GO) env GOPATH)/bin
GOLANGCI_LINT := $(GOBIN)/golangci-lint

# The machine's PostgreSQL and NATS server, unless the caller names others.
RELAYR_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export RELAYR_TEST_DATABASE_URL
RELAYR_TEST_NATS_URL ?= nats://127.0.0.1:4222
export RELAYR_TEST_NATS_URL

MODULE_DIRS = $(shell $(GO) list -m -f '{{.Dir}}')

.PHONY: all test vet race release-check core-alone go-directives db nats lint bench demo chaos fuzz fuzz-short relayr dist image image-check screenshots quickstart clean

all: test

## test: vet and race-test every module (the demo and a short chaos run among
## the tests), check core stands alone, prove the modules from a module
## proxy (release-check), fuzz briefly, run the image in podman (image-check).
test: db nats core-alone go-directives vet release-check race fuzz-short quickstart image-check

vet:
	$(GO) vet work

race:
	$(GO) test -race -count=1 -timeout 20m work

## release-check: the modules as users get them: from a file-system module
## proxy of this tree, outside the workspace, offline (scripts/release-check.sh):
## each module builds alone, go install of the binary, examples/filer files
## once and pulls no pgx, NATS or browser module, core vendors alone.
release-check:
	bash scripts/release-check.sh

## core-alone: core requires no module at all.
core-alone:
	@n=$$(cd core && GOWORK=off $(GO) list -m all | wc -l); \
	if [ "$$n" -ne 1 ]; then echo "core requires modules:"; (cd core && GOWORK=off $(GO) list -m all); exit 1; fi; \
	echo "core requires nothing"

## go-directives: every module and go.work name one go version.
go-directives:
	@n=$$(grep -h '^go ' go.work $(addsuffix /go.mod,$(MODULE_DIRS)) | sort -u | wc -l); \
	if [ "$$n" -ne 1 ]; then echo "the go directives differ:"; grep -H '^go ' go.work $(addsuffix /go.mod,$(MODULE_DIRS)); exit 1; fi; \
	echo "one go directive: $$(grep -h '^go ' go.work)"

## db: start the machine's PostgreSQL when it is down (the ledger tests need it).
db:
	@if command -v pg_ctlcluster >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then \
		echo "starting PostgreSQL"; \
		pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start; \
		for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; \
	fi

$(GOLANGCI_LINT):
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

## lint: golangci-lint v2 in every module.
lint: $(GOLANGCI_LINT)
	@set -e; for d in $(MODULE_DIRS); do \
		echo "golangci-lint $$d"; \
		(cd $$d && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...); \
	done

## nats: start the machine's NATS server with JetStream when it is down (the
## natsjs tests and the NATS figures need it).
nats:
	@if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && [ -x /usr/sbin/nats-server ]; then \
		echo "starting nats-server"; mkdir -p /var/lib/nats-server; \
		start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
			-a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log; \
		for i in $$(seq 1 30); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 1; done; \
	fi

## bench: the figures, the ledgers' and the webhook flood's benchmarks in one run, then the README's table.
## Each SQL ledger's filings run three times over, each run beside its floor
## in phases of a few tens of milliseconds that alternate between the two
## (ledgertest.FilingsBesideFloor), so that a drift of the machine's speed
## moves both alike.
bench: db nats
	@mkdir -p bin
	set -o pipefail; $(GO) test -run '^$$' -bench . -skip '^BenchmarkStalledTracker$$' -count 3 -timeout 30m \
		./core/follow ./core/ledger/memledger ./adapters/httpapi ./adapters/github ./adapters/jira ./adapters/gitlab ./adapters/linear ./apps/relayr/internal/figures \
		| tee bin/bench.txt
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkStalledTracker$$' -benchtime 1x -timeout 30m \
		./apps/relayr/internal/figures | tee -a bin/bench.txt
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkBeat$$' -count 3 ./adapters/ledgerpg | tee -a bin/bench.txt
	set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkSecondReplicasWait$$' -benchtime 100x -count 3 ./adapters/ledgerpg | tee -a bin/bench.txt
	set -o pipefail; for pkg in ./adapters/ledgersqlite ./adapters/ledgerpg; do \
		$(GO) test -run '^$$' -bench '^BenchmarkFiling$$' -benchtime 2s -count 3 -timeout 30m $$pkg | tee -a bin/bench.txt || exit 1; \
	done
	set -o pipefail; $(GO) test -count=1 -run 'Figure' -v ./core/follow ./adapters/plane ./adapters/ledgerpg | grep FIGURE | tee -a bin/bench.txt
	$(GO) run ./adapters/ledgerpg/tools/benchtable < bin/bench.txt

## chaos: the full chaos run: three replicas of the built binary on PostgreSQL
## with RLS, 2,000 keys, 16 clients, faults and kills (make test runs a short one).
chaos: db
	RELAYR_CHAOS=full RELAYR_REQUIRE_DB=1 $(GO) test -count=1 -timeout 30m -run TestChaos -v ./apps/relayr

## relayr: the static binary (no cgo).
relayr:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o bin/relayr ./apps/relayr

## dist: the release artifacts in bin/dist (ADR-1017): a static, reproducible
## binary for linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 and
## windows/amd64, an archive and a CycloneDX SBOM of each, and SHA256SUMS.
dist:
	$(GO) run ./tools/dist -out bin/dist

## quickstart: docs/quickstart.md run as written, in a copy of the tree
## (Vikunja's emulation on 127.0.0.1:3456, relayr on 127.0.0.1:8080).
quickstart:
	bash scripts/quickstart.sh

## image: the container image, an OCI archive of linux/amd64 and linux/arm64
## (bin/relayr-image.tar), built without a daemon or a base image (tools/image).
image:
	$(GO) run ./tools/image -out bin/relayr-image.tar

## image-check: the image loaded into podman, relayr version and relayr demo
## run in it (scripts/image-check.sh; fails where podman is missing).
image-check: image
	bash scripts/image-check.sh bin/relayr-image.tar

## demo: the whole loop on loopback, no tracker installed.
demo:
	$(GO) run ./apps/relayr demo

## screenshots: the operator page's screenshots in docs/ui, taken by its
## browser tests in headless chromium (Debian's chromium package).
screenshots:
	cd apps/relayr/internal/browser && RELAYR_REQUIRE_BROWSER=1 RELAYR_UI_SCREENSHOTS=$(CURDIR)/docs/ui \
		$(GO) test -count=1 -run TestOperatorPage .

## fuzz-short / fuzz: every fuzz target, for a few seconds or about a minute each
## (counts of executions, not durations: scripts/fuzz.sh says why).
fuzz-short:
	bash scripts/fuzz.sh 30000x

fuzz:
	bash scripts/fuzz.sh 300000x

clean:
	rm -rf bin
