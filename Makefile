# bpfbench: what it costs the kernel to call a BPF program.
# Benchmarks and most tests need root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN).

SHELL     := bash
GO        ?= go
EXEC      ?= $(if $(filter 0,$(shell id -u)),,-exec sudo)
SUDO      ?= $(if $(filter 0,$(shell id -u)),,sudo)
COUNT     ?= 10
BENCH     ?= .
BENCHTIME ?= 1s
LABEL     ?= run
# FLAGS are the suite's own flags, passed to every run of it:
# FLAGS='-bpfbench.cpu=1 -bpfbench.calltime=8ms'.
FLAGS     ?=
# -dirty: tracked files changed. A results file of the last run, lying
# untracked in the tree, changes no code.
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null)$(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo -dirty)
LDFLAGS   := -X bpfbench/bpf/labels.Commit=$(COMMIT)
RUNSTAMP  := $(shell date -u +%Y%m%dT%H%M%SZ)
RESULTDIR ?= results
BENCHBIN  ?= .cache/bench/bench.test
# The machine, in the name: every VM's host is called vm. The CPU's vendor
# and family-model (amd-26-2), as the cpu-vendor and cpu-family-model
# labels say, which are what make compare pairs files by.
CPUTAG    := $(shell awk -F': *' '/^vendor_id/ {v = ($$2 ~ /AMD/) ? "amd" : ($$2 ~ /Intel/) ? "intel" : "cpu"} /^cpu family/ {f = $$2} /^model[ \t]*:/ {m = $$2} END {printf "%s-%s-%s", v, f, m}' /proc/cpuinfo 2>/dev/null)
RESULT    ?= $(RESULTDIR)/$(RUNSTAMP)-$(shell hostname -s)-$(CPUTAG)-$(shell uname -r)-$(LABEL).txt
# Each row's diagnostics (clock rate, the kernel's own average, call cost,
# calls measured again, stolen time, losses), beside the results.
DIAG      ?= $(RESULT:.txt=.diag)

# Other kernels, booted in QEMU around the test binary (tools/vmexec).
# KERNEL is a series fetched by `make kernels` (5.10, 6.1, 6.12, 7.3) or the path
# of a bzImage; VMEXEC_CMDLINE=... adds kernel options (mitigations=off).
KERNELS   ?= 5.10 6.1 6.12 7.3
KERNELDIR ?= .cache/kernels
VMKERNEL   = $(abspath $(if $(wildcard $(KERNEL)),$(KERNEL),$(KERNELDIR)/$(KERNEL)/vmlinuz))
# The release: boot/vmlinuz-<rel>, or usr/lib/modules/<rel>/vmlinuz.
VMREL      = $(if $(filter vmlinuz,$(notdir $(realpath $(VMKERNEL)))),$(notdir $(patsubst %/,%,$(dir $(realpath $(VMKERNEL))))),$(patsubst vmlinuz-%,%,$(notdir $(realpath $(VMKERNEL)))))
# ICOUNT=S counts instructions instead of keeping time (QEMU -icount
# shift=S, single-threaded TCG, one vCPU: tools/vmexec's VMEXEC_ICOUNT):
# results report instrs/op, the same on every run and host. ICOUNT=0 makes
# one instruction one count.
ICOUNT    ?=
# VMACCEL: KVM where a guest boots under it, TCG otherwise. /dev/kvm can
# open on a host whose nested virtualisation cannot run the kernel at all,
# so the choice boots KERNEL under KVM once (tools/vmexec stops a guest KVM
# cannot run within a second), the first time a target needs it; the
# results file's name and its virt label then agree.
VMACCEL   ?= $(if $(ICOUNT),tcg,$(eval VMACCEL := $(kvmprobe))$(VMACCEL))
kvmprobe   = $(shell test -r /dev/kvm -a -w /dev/kvm -a -r "$(VMKERNEL)" && KERNEL="$(VMKERNEL)" VMEXEC_ACCEL=kvm VMEXEC_TIMEOUT=120 \
	VMEXEC_MODULES= VMEXEC_TOOLS= tools/vmexec /bin/true >/dev/null 2>&1 && echo kvm || echo tcg)
VMVIRT     = $(if $(ICOUNT),icount,$(VMACCEL))
VMTIMEOUT ?= 60m
# Under TCG a benchmark second takes a minute and measures nothing: vmbench
# runs each benchmark once, briefly, unless COUNT or BENCHTIME are given.
# Under ICOUNT a run is exact to a fraction of an instruction, given enough
# rounds for the median to step over the ticks and preemptions that land in
# some: 100ms of virtual time (100M instructions) per row, once.
VMCOUNT     = $(if $(and $(filter tcg,$(VMACCEL)),$(filter file,$(origin COUNT))),1,$(COUNT))
VMBENCHTIME = $(if $(and $(filter tcg,$(VMACCEL)),$(filter file,$(origin BENCHTIME))),$(if $(ICOUNT),100ms,1x),$(BENCHTIME))
VMRESULT  ?= results/$(RUNSTAMP)-qemu-$(VMVIRT)-$(VMREL)-$(LABEL).txt
# ANATOMY=1 also counts, per op, what each row executes by kind (calls,
# returns, thunks, kCFI checks, fences) with a QEMU plugin, into
# $(VMRESULT:.txt=.anatomy) (docs/icount.md#anatomy). It implies ICOUNT=0.
ANATOMY   ?=
ICOUNT    := $(if $(ANATOMY),$(or $(ICOUNT),0),$(ICOUNT))
ANATOMYSO  = .cache/anatomy/anatomy.so
ANATOMYRAW = .cache/anatomy/$(notdir $(VMRESULT:.txt=))
# Skipped in guests: it runs every benchmark again to prove the host's
# interfaces unchanged, and a guest has none but lo; vmsmoke runs them.
VMSKIP    ?= ^TestScenarioHostInterfaces$$
VMGOTEST   = KERNEL=$(VMKERNEL) VMEXEC_ACCEL=$(VMACCEL) $(if $(ICOUNT),VMEXEC_ICOUNT=$(ICOUNT)) \
	$(if $(ANATOMY),VMEXEC_ANATOMY=$(abspath $(ANATOMYRAW)) VMEXEC_ANATOMY_PLUGIN=$(abspath $(ANATOMYSO))) CGO_ENABLED=0 $(GO) test -exec $(CURDIR)/tools/vmexec \
	-ldflags '$(LDFLAGS)' -timeout $(VMTIMEOUT) -p 1

.PHONY: help deps generate check-generate test bench benchbin aa smoke compare vmdeps kernels vmtest vmbench vmsmoke vmkernel

help: ## list the targets and the variables they take
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables (make bench COUNT=3 ...):"
	@echo "  COUNT=$(COUNT)        passes of bench, aa, vmbench"
	@echo "  BENCH=$(BENCH)         the -bench pattern (a \$$ is written \$$\$$)"
	@echo "  LABEL=$(LABEL)       the last part of a results file's name"
	@echo "  FLAGS=          the suite's -bpfbench.* flags, for bench, aa, smoke, vmbench (README.md#flags)"
	@echo "  KERNEL=         vmtest, vmbench, bootmatrix: a series of make kernels ($(KERNELS)) or a bzImage"
	@echo "  ICOUNT=         vmbench: count instructions (ICOUNT=0), docs/icount.md"
	@echo "  VMACCEL=        vmtest, vmbench: kvm or tcg (default: kvm where a guest boots under it)"
	@echo "  ANATOMY=        vmbench: ANATOMY=1 also writes the anatomy, docs/icount.md#anatomy"
	@echo "  VMEXEC_CMDLINE= vmtest, vmbench: kernel options; VMEXEC_CPU= the QEMU CPU model"
	@echo "  BOOTS=          bootmatrix: which boots (default: all), docs/kernels.md#boot-options"
	@echo "  FAILON=         compare: also fail a row slower by this (5% of cycles/op, or 2ns of ns/op), docs/ci.md"
	@echo "  TOLERANCE=      compare: instructions per op a counted path may grow by, docs/ci.md#tolerance"

deps: ## install what regenerating the BPF objects needs (Debian/Ubuntu, as root)
	apt-get update -qq
	apt-get install -y -qq clang llvm libbpf-dev linux-libc-dev

generate: ## regenerate the bpf2go loaders from progs/ (needs `make deps`)
	cd bpf && $(GO) generate ./...

check-generate: generate ## fail if the committed loaders differ from a fresh generation
	git diff --exit-code -- bpf/

test: ## run the tests (as root, so the kernel is exercised)
	$(GO) test $(EXEC) -ldflags '$(LDFLAGS)' ./...

# The suite runs COUNT times as whole passes (-count 1 each), not with
# -count COUNT: -count runs a row's repetitions back to back, within a
# minute, so they all see one state of the machine, and two files made
# minutes apart differ "significantly" by the machine's drift. Passes spread
# each row's runs over the whole run, as the drift is, and benchstat's
# spread includes it.
# Between passes it says on stderr where it is and how long is left, from
# the passes so far (tools/progress); the results file has none of it.
bench: benchbin ## run the benchmarks in COUNT passes and save them under results/ (LABEL=... names the run)
	@mkdir -p $(RESULTDIR)
	@set -o pipefail; start=$$(date +%s); for pass in $$(seq $(COUNT)); do \
		tools/progress "make bench $(LABEL)" pass $$pass $(COUNT) $$start; \
		(cd bench && $(SUDO) env BPFBENCH_RUNSTAMP=$(RUNSTAMP) $(abspath $(BENCHBIN)) -test.run '^$$' -test.bench '$(BENCH)' -test.benchtime $(BENCHTIME) -test.count 1 -bpfbench.diag=$(abspath $(DIAG)) $(FLAGS)) || exit 1; \
	done | tee $(RESULT) && \
	tools/progress "make bench $(LABEL)" pass $$(( $(COUNT) + 1 )) $(COUNT) $$start
	@$(GO) run ./results/report -passes $(RESULT) | tee -a $(RESULT)
	@echo saved $(RESULT), diagnostics in $(DIAG)

# The suite's test binary, built once for a run (both runs of an A/A pair):
# every pass runs the same code and says the commit it was built from,
# whatever is edited meanwhile.
benchbin:
	@mkdir -p $(dir $(BENCHBIN))
	$(GO) test -c -ldflags '$(LDFLAGS)' -o $(BENCHBIN) ./bench

# Two runs of one commit, one after the other, are what the machine's
# noise allows between runs: make compare holds every row's move against
# the newest such pair of the same machine (cpu-vendor, cpu-family-model,
# virt) in results/aa/.
aa: benchbin ## make this machine's A/A pair, make compare's noise floor: two make bench runs into results/aa/
	@start=$$(date +%s); \
	tools/progress "make aa" run 1 2 $$start && $(MAKE) bench LABEL=aa1 RESULTDIR=results/aa BENCHBIN=$(BENCHBIN) -o benchbin && \
	tools/progress "make aa" run 2 2 $$start && $(MAKE) bench LABEL=aa2 RESULTDIR=results/aa BENCHBIN=$(BENCHBIN) -o benchbin && \
	tools/progress "make aa" run 3 2 $$start

smoke: ## run every benchmark briefly, failing if any fails (what CI does)
	$(GO) test $(EXEC) -ldflags '$(LDFLAGS)' -run '^$$' -bench . -benchtime 100x -count 1 ./bench $(FLAGS)

# Every file has its own runstamp (and boots differ in other labels), so
# benchstat's default -table .config would put each file in a table of its
# own and compare nothing: one table, a column per file (or per COL). By
# default only the tables that say what changed (HEADLINE); ALL=1 prints
# every unit's. Runs with too few free calls are left out (report
# -uncontended). Two instruction-count files compare as exact counts. The
# gate ends it (docs/ci.md): make fails when B regressed.
HEADLINE  ?= .unit:(cycles/op OR delta-ns/op OR ns/pkt OR delta-ns/pkt OR instrs/op OR delta-instrs/op)
compare: ## compare two results files: what changed, the shift all rows share, the rows beyond the machine's noise, and the gate (make exits 2 when B regressed): make compare A=old.txt B=new.txt [COL=...] [ALL=1] [FAILON=5%|2ns] [TOLERANCE=N]
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=old.txt B=new.txt"; exit 2; }
	@if grep -q '^virt: tcg-icount$$' $(A) && grep -q '^virt: tcg-icount$$' $(B) && test -z "$(ALL)"; then \
		$(GO) run ./results/report -drift $(A) $(B); \
	else \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir "$$tmp/A" "$$tmp/B" && \
		$(GO) run ./results/report -uncontended $(A) > "$$tmp/A/$(notdir $(A))" && \
		$(GO) run ./results/report -uncontended $(B) > "$$tmp/B/$(notdir $(B))" && \
		bs=$$($(GO) tool -n benchstat) && (cd "$$tmp" && $$bs -table '' $(if $(COL),-col $(COL)) $(if $(ALL),,-filter '$(HEADLINE)') A/$(notdir $(A)) B/$(notdir $(B))) && echo && \
		$(GO) run ./results/report -drift $(if $(ALL),-all) $(A) $(B); \
	fi
	@if [ -n "$(ALL)" ] && [ -f "$(A:.txt=.diag)" ] && [ -f "$(B:.txt=.diag)" ]; then \
		echo; echo "Diagnostics ($(A:.txt=.diag), $(B:.txt=.diag)):"; \
		$(GO) tool benchstat -table '' $(A:.txt=.diag) $(B:.txt=.diag); \
	fi
	@echo
	$(GO) run ./results/report -gate $(if $(FAILON),-fail-on $(FAILON)) $(if $(TOLERANCE),-tolerance $(TOLERANCE)) $(A) $(B)

# Without FILES: the newest results file of this checkout's own runs (one
# git does not track), never a committed one.
MINE       = $(lastword $(sort $(shell git ls-files --others --exclude-standard -- 'results/*.txt' 2>/dev/null)))
.PHONY: report kcidb
report: ## verdicts on docs/claims.md (and mechanisms, from .anatomy files), plots in results/plots/: make report [FILES="results/a.txt results/b.anatomy"] [REPORTFLAGS=-plots=false] (default: your newest run)
	@test -n "$(or $(FILES),$(MINE))" || { echo "make report: no run of yours in results/ (make bench): give FILES=..."; exit 2; }
	$(GO) run ./results/report $(REPORTFLAGS) $(or $(FILES),$(MINE))

kcidb: ## one KCIDB v5.3 report on stdout, for kernel CI (docs/ci.md#kcidb): make kcidb ORIGIN=myci FILES="..." [GATE=1 or DRIFT=1, FILES="A B"]
	@test -n "$(ORIGIN)" || { echo "make kcidb: ORIGIN=... names the CI system that submits the report" >&2; exit 2; }
	@$(GO) run ./results/report -kcidb -origin '$(ORIGIN)' $(if $(GATE),-gate) $(if $(DRIFT),-drift) $(or $(FILES),$(MINE))

vmdeps: ## install what booting other kernels needs: QEMU, busybox, cpio (Debian/Ubuntu, as root)
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends --no-upgrade qemu-system-x86 busybox-static cpio file xz-utils zstd kmod iproute2 debian-archive-keyring

kernels: ## fetch Debian's cloud kernels KERNELS=... (default 5.10 6.1 6.12 7.3) into .cache/kernels/
	KERNELS_DIR=$(KERNELDIR) tools/kernels $(KERNELS)

vmkernel:
	@test -n "$(KERNEL)" || { echo "set KERNEL to a series from make kernels ($(KERNELS)) or a bzImage path"; exit 2; }
	@test -r "$(VMKERNEL)" || { echo "no kernel $(VMKERNEL): run make kernels, or give KERNEL=/path/to/bzImage"; exit 2; }

# The packages whose tests ask the kernel something: each package's tests
# boot a guest of their own, and the others (results/, the estimators, the
# gauge, the lock) compute the same on any kernel.
VMTESTPKGS ?= ./bench ./bpf ./bpf/host ./bpf/iface ./bpf/labels ./bpf/measure ./bpf/measure/testrun ./bpf/probe ./bpf/rig ./bpf/xsk
vmtest: vmkernel ## run the tests that ask the kernel in a guest: make vmtest KERNEL=6.1 [VMEXEC_CMDLINE=...] [VMTESTPKGS=...]
	$(VMGOTEST) -count 1 $(if $(VMSKIP),-skip '$(VMSKIP)') $(VMTESTPKGS)

vmbench: vmkernel $(if $(ANATOMY),anatomy-plugin) ## run the benchmarks in a guest and save them, with skip reasons, under results/: make vmbench KERNEL=6.1 [ICOUNT=0] [ANATOMY=1] LABEL=...
	@mkdir -p results
	$(if $(ANATOMY),rm -rf $(ANATOMYRAW))
	set -o pipefail; $(VMGOTEST) -run '^$$' -bench '$(BENCH)' -benchtime $(VMBENCHTIME) -count $(VMCOUNT) -v ./bench $(FLAGS) | tee $(VMRESULT)
	@echo saved $(VMRESULT)
	$(if $(ANATOMY),$(GO) run ./tools/anatomy -raw $(ANATOMYRAW) -o $(VMRESULT:.txt=.anatomy) $(VMRESULT))

# The boots of tools/bootmatrix: a QEMU CPU model and a command line each.
BOOTS     ?=
.PHONY: bootmatrix
bootmatrix: vmkernel ## run BENCH on one kernel under several boots (CPU model, cmdline), counting instructions with the anatomy: make bootmatrix KERNEL=7.3 [BOOTS="default mitigations-off ..."] [ANATOMY=]
	BENCH='$(BENCH)' $(if $(filter command line,$(origin ANATOMY)),ANATOMY='$(ANATOMY)') tools/bootmatrix $(KERNEL) $(BOOTS)

.PHONY: anatomy-plugin
anatomy-plugin: $(ANATOMYSO) ## build the QEMU plugin that counts what a run executes (tools/anatomy/plugin)
$(ANATOMYSO): tools/anatomy/plugin/anatomy.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $<

vmsmoke: vmkernel ## run every benchmark once in a guest, with skip reasons, failing if any fails (what CI does per kernel)
	$(VMGOTEST) -run '^$$' -bench '$(BENCH)' -benchtime 1x -count 1 -v ./bench

.PHONY: kcfi-kernels
kcfi-kernels: ## build the kCFI kernel pair (CONFIG_CFI_CLANG=y/n, clang) from Debian's linux-source-6.12 into .cache/kernels/6.12-kcfi, 6.12-nocfi (as root; most of an hour on 2 CPUs)
	KERNELS_DIR=$(KERNELDIR) tools/kcfi
