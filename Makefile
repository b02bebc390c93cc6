# bpfbench: what it costs the kernel to call a BPF program.
# Benchmarks and most tests need root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN).

GO        ?= go
EXEC      ?= $(if $(filter 0,$(shell id -u)),,-exec sudo)
COUNT     ?= 10
BENCH     ?= .
BENCHTIME ?= 1s
LABEL     ?= run
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null)$(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo -dirty)
LDFLAGS   := -X bpfbench/bpf.Commit=$(COMMIT)
RUNSTAMP  := $(shell date -u +%Y%m%dT%H%M%SZ)
RESULT    ?= results/$(RUNSTAMP)-$(shell hostname -s)-$(shell uname -r)-$(LABEL).txt

.PHONY: help deps generate check-generate test bench smoke compare

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## install what regenerating the BPF objects needs (Debian/Ubuntu, as root)
	apt-get update -qq
	apt-get install -y -qq clang llvm libbpf-dev linux-libc-dev

generate: ## regenerate the bpf2go loaders from progs/ (needs `make deps`)
	cd bpf && $(GO) generate ./...

check-generate: generate ## fail if the committed loaders differ from a fresh generation
	git diff --exit-code -- bpf/

test: ## run the tests (as root, so the kernel is exercised)
	$(GO) test $(EXEC) -ldflags '$(LDFLAGS)' ./...

bench: ## run the benchmarks COUNT times and save them under results/ (LABEL=... names the run)
	@mkdir -p results
	$(GO) test $(EXEC) -ldflags '$(LDFLAGS)' -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -count $(COUNT) ./bench | tee $(RESULT)
	@echo saved $(RESULT)

smoke: ## run every benchmark briefly, failing if any fails (what CI does)
	$(GO) test $(EXEC) -ldflags '$(LDFLAGS)' -run '^$$' -bench . -benchtime 100x -count 1 ./bench

compare: ## compare two results files: make compare A=old.txt B=new.txt [COL=...]
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=old.txt B=new.txt"; exit 2; }
	$(GO) tool benchstat $(if $(COL),-col $(COL)) $(A) $(B)

.PHONY: report
report: ## verdicts on CLAIMS.md and SVG plots: make report [FILES="results/a.txt results/b.txt"] (default: newest file)
	$(GO) run ./results/report $(or $(FILES),$(lastword $(sort $(wildcard results/*.txt))))
