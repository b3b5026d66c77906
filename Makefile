# memclaims: one non-recursive Makefile. `make help` lists the targets.
#
# Host code (common/*.c, tools/*.c, tools/*/*.c, tests/*.c, experiments/*.c)
# is built with $(CC) -Wall -Wextra; CUDA code (*.cu) with nvcc for
# $(CUDA_ARCH). SAN=1 puts every host object under AddressSanitizer and
# UndefinedBehaviorSanitizer in build/san/ (what `make test` runs).
# CUDA objects are built once, in build/obj/, and linked into both builds:
# make test runs no kernel, so compiling them again under the sanitizers
# cost two cores minutes after every make run-all; the host code in .cu
# files is not instrumented (the .c files, the allocator model, parsers,
# the report, are).

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CC        ?= gcc
CXX       ?= g++
# CUDA_ARCH: what `make test` and single targets build for where the build
# folder has no CUDA objects yet, Hopper (sm_90) machine code plus
# compute_90 PTX (nvcc needs no GPU; make test runs no kernel); where it
# has, the flags they were built with (build/.cuda-arch), so that no goal
# recompiles what another built. `make`, `make all`, `make run-all` and
# `make test-gpu` build for the GPU this machine has, or for sm_90 when it
# has none (scripts/cuda-arch); CUDA_ARCH given on the command line or in
# the environment overrides both (CUDA_ARCH=fat: every architecture).
CUDA_ARCH ?= sm_90
SAN       ?= 0
V         ?= 0

ifeq ($(SAN),1)
# The test build is also the debug build: the allocator model checks its
# invariants after every operation (CA_DEBUG), in every test and every
# --model-only run of make test.
BUILD    := build/san
SANFLAGS := -fsanitize=address -fsanitize=undefined -fsanitize=float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      := -O1 -g -DCA_DEBUG
else
BUILD    := build
SANFLAGS :=
OPT      := -O2 -g
endif

# The flags CUDA objects were built with; rewritten only when they change,
# so a change of architecture rebuilds them.
# CUDA objects' build folder: the plain build's (build/san's parent), or BUILD given.
CU_BUILD   := $(patsubst %/san,%,$(BUILD))
ARCH_STAMP := $(CU_BUILD)/.cuda-arch
ARCH_GOALS := all run-all test-gpu
ifneq ($(filter command line environment,$(origin CUDA_ARCH)),)
CUDA_ARCH_FLAGS := $(if $(filter fat,$(CUDA_ARCH)),$(shell NVCC="$(NVCC)" scripts/cuda-arch fat),-arch=$(CUDA_ARCH))
else ifneq ($(filter $(ARCH_GOALS),$(or $(MAKECMDGOALS),all)),)
CUDA_ARCH_FLAGS := $(shell NVCC="$(NVCC)" scripts/cuda-arch)
else
# Any other goal (make compare, make whatif, a single file) takes the flags
# this build folder was built with, so that it recompiles nothing; sm_90
# where nothing was built yet.
CUDA_ARCH_FLAGS := $(or $(shell cat $(ARCH_STAMP) 2>/dev/null),-arch=$(CUDA_ARCH))
endif
ifeq ($(filter-out clean help deps,$(or $(MAKECMDGOALS),all)),)
else
$(shell mkdir -p $(CU_BUILD) && { [ "$$(cat $(ARCH_STAMP) 2>/dev/null)" = "$(CUDA_ARCH_FLAGS)" ] || echo "$(CUDA_ARCH_FLAGS)" > $(ARCH_STAMP); })
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

CPPFLAGS  := -Icommon -Iexperiments -I$(CUDA_HOME)/include -MMD -MP
CFLAGS    := -std=c11 -Wall -Wextra $(OPT) $(SANFLAGS)
comma     := ,
empty     :=
space     := $(empty) $(empty)
# C++ warns when a designated initializer leaves a member out; descriptors
# (mc_experiment) leave optional members out by design, as C allows.
# No $(SANFLAGS) and the plain build's -O2: one object serves both builds.
NVCCFLAGS := $(CUDA_ARCH_FLAGS) -std=c++17 -O2 -g -Icommon -Iexperiments -MMD -MP \
             -Xcompiler $(subst $(space),$(comma),-Wall -Wextra -Wno-missing-field-initializers)
LDFLAGS   := -Wl,--as-needed $(SANFLAGS) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
LDLIBS    := -lcjson -lcudart_static -lm -lpthread -ldl -lrt

# NCCL, for C24's GPU run (common/workload/sharded/sharded_gpu.cu). NCCL_HOME is a
# folder with include/nccl.h and lib/libnccl.so*; unset, the pip package
# PyTorch ships it in is looked for under python3's `nvidia` namespace
# (nvidia/nccl/, or nvidia/<cuXX>/ in newer wheels), then the CUDA toolkit's
# own (CUDA_HOME/include/nccl.h, lib/libnccl.so), where it ships one. Without nccl.h
# everything still builds and C24 waives its GPU part.
# $(call pip_nvidia,DIR,HEADER): the folder above include/HEADER in python3's
# nvidia namespace package (PyTorch's pip libraries; DIR may be a glob), or
# nothing.
pip_nvidia = $(shell python3 -c 'import glob, os, nvidia; print(next((os.path.dirname(os.path.dirname(h)) for p in nvidia.__path__ for h in sorted(glob.glob(os.path.join(p, "$(1)", "include", "$(2)")))), ""))' 2>/dev/null)
ifeq ($(origin NCCL_HOME),undefined)
NCCL_HOME := $(call pip_nvidia,*,nccl.h)
ifeq ($(NCCL_HOME),)
NCCL_HOME := $(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(CUDA_HOME))
endif
endif
NCCL_LIB  := $(if $(NCCL_HOME),$(firstword $(notdir $(wildcard $(NCCL_HOME)/lib/libnccl.so $(NCCL_HOME)/lib/libnccl.so.2))))
ifneq ($(and $(NCCL_LIB),$(wildcard $(NCCL_HOME)/include/nccl.h)),)
CPPFLAGS  += -DMC_HAVE_NCCL -I$(NCCL_HOME)/include
NVCCFLAGS += -DMC_HAVE_NCCL -I$(NCCL_HOME)/include
# -l: with the file name, since the pip package has libnccl.so.2 and no libnccl.so.
LDLIBS    += -L$(NCCL_HOME)/lib -Wl,-rpath,$(NCCL_HOME)/lib -l:$(NCCL_LIB)
endif

# cuDNN 9, for the Transformer's fp16/bf16 attention through cuDNN's fused
# flash kernels, as PyTorch runs it (tfm_attention_cudnn.cu). CUDNN_HOME is a
# folder with include/cudnn.h and lib/libcudnn.so.9 (or lib64/); unset, the
# pip package PyTorch ships it in (python3's nvidia/cudnn/), else the CUDA
# toolkit's own. Without it everything builds and the suite's own attention
# kernels run.
ifeq ($(origin CUDNN_HOME),undefined)
CUDNN_HOME := $(call pip_nvidia,cudnn,cudnn.h)
ifeq ($(CUDNN_HOME),)
CUDNN_HOME := $(if $(wildcard $(CUDA_HOME)/include/cudnn.h),$(CUDA_HOME))
endif
endif
CUDNN_LIBDIR := $(if $(CUDNN_HOME),$(firstword $(patsubst %/,%,$(dir $(wildcard $(CUDNN_HOME)/lib/libcudnn.so.9 $(CUDNN_HOME)/lib64/libcudnn.so.9)))))
ifneq ($(and $(CUDNN_LIBDIR),$(wildcard $(CUDNN_HOME)/include/cudnn.h)),)
# cuDNN's include before the toolkit's, which may hold another cudnn.h (nvcc
# searches its own include after every -I)
CPPFLAGS  := -I$(CUDNN_HOME)/include $(CPPFLAGS) -DMC_HAVE_CUDNN
NVCCFLAGS += -I$(CUDNN_HOME)/include -DMC_HAVE_CUDNN
LDLIBS    += -L$(CUDNN_LIBDIR) -Wl,-rpath,$(CUDNN_LIBDIR) -l:libcudnn.so.9
endif

# The library, one folder a layer (README "Layout"); experiments/support/ holds
# helpers of one or two experiments, linked into experiments and tests only.
LIB_DIRS   := common common/results common/alloc common/trace common/workload \
              common/workload/core common/workload/mlp common/workload/transformer \
              common/workload/transformer/kernels common/workload/transformer/reference \
              common/workload/sharded
COMMON_SRC := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c $(d)/*.cu))
# $(call objs,SOURCES): their objects, a .c's in this build, a .cu's in build/obj/.
objs = $(patsubst %,$(BUILD)/obj/%.o,$(filter %.c,$(1))) $(patsubst %,$(CU_BUILD)/obj/%.o,$(filter %.cu,$(1)))
COMMON_OBJ := $(call objs,$(COMMON_SRC))
SUPPORT_SRC := $(wildcard experiments/support/*.c experiments/support/*.cu)
SUPPORT_OBJ := $(call objs,$(SUPPORT_SRC))
EXP_SRC    := $(sort $(wildcard experiments/c[0-9][0-9]_*.c experiments/c[0-9][0-9]_*.cu))
EXP_BIN    := $(patsubst experiments/%,$(BUILD)/%,$(basename $(EXP_SRC)))
TOOL_SRC   := $(wildcard tools/*.c tools/*.cu)
TOOL_BIN   := $(patsubst tools/%,$(BUILD)/%,$(basename $(TOOL_SRC)))
TEST_SRC   := $(wildcard tests/test_*.c)
TEST_BIN   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
LIB        := $(BUILD)/libmemclaims.a
SUPPORT_LIB := $(BUILD)/libsupport.a

.PHONY: all help test test-build test-gpu run-all plots report compare readme whatif bench fuzz deps clean setup
.DEFAULT_GOAL := all

# ------------------------------------------------------------------ set-up

# Every target the README shows sets itself up before anything is compiled
# or run: scripts/deps --need looks for the Debian packages those goals need
# and, as root, installs the missing ones, else stops with one line giving
# the apt-get command. Objects and these goals wait for `setup` (order-only:
# it never makes anything out of date). Other goals (single files,
# test-build, clean) check nothing; sub-makes get SETUP_GOALS= so the check
# runs once.
DEPS_CHECK  ?= scripts/deps
SETUP_GOALS := $(filter all whatif compare bench plots report readme test test-gpu run-all fuzz,$(or $(MAKECMDGOALS),all))
setup:
	$(if $(SETUP_GOALS),$(Q)NVCC="$(NVCC)" $(DEPS_CHECK) --need $(SETUP_GOALS))
all whatif compare bench plots report readme test test-gpu run-all fuzz: | setup

all: $(EXP_BIN) $(TOOL_BIN)

help:
	@echo "make            build every experiment into build/cNN_<slug> and the tools"
	@echo "make run-all    build, run every experiment, write results/<run>/ with charts and REPORT.md"
	@echo "                (and PyTorch's own figures beside the suite's where torch and a GPU are here; PYTORCH=0: not)"
	@echo "make test       everything that needs no GPU (unit tests, sanitizers, waivers, scripts)"
	@echo "make test-gpu   every experiment with --quick and its verification on this machine's GPU"
	@echo "make plots RUN=results/<run>   charts for a run;  make report RUN=...   its REPORT.md"
	@echo "make compare A=results/<run> B=results/<run> [OUT=DIR]   verdicts and figures of two runs: COMPARE.md"
	@echo "make readme     regenerate the README's figures and verdict table from results/reference-h100 and tests/fixtures"
	@echo "make bench      the allocator model's replay speed;  make fuzz   the trace parser under libFuzzer"
	@echo "make whatif SNAPSHOT=run.pickle [CONTEXT=BYTES]   replay your PyTorch memory snapshot under each"
	@echo "                allocator setting and card size: results/whatif-<time>-<name>/WHATIF.md"
	@echo "make deps       install the Debian packages (every target above installs what it misses)"
	@echo "Variables: CUDA_ARCH=$(CUDA_ARCH) (make test; make/run-all: this GPU, or all archs) CUDA_HOME=$(CUDA_HOME)"
	@echo "           NCCL_HOME=$(NCCL_HOME) CUDNN_HOME=$(CUDNN_HOME) SAN=1 V=1"

# ------------------------------------------------------------------ build

$(BUILD)/obj/%.c.o: %.c | setup
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC    $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(CU_BUILD)/obj/%.cu.o: %.cu $(ARCH_STAMP) | setup
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC  $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(ARCH_STAMP):
	@mkdir -p $(@D) && echo "$(CUDA_ARCH_FLAGS)" > $@

$(LIB): $(COMMON_OBJ)
	@$(if $(Q),echo "  AR    $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(SUPPORT_LIB): $(SUPPORT_OBJ)
	@$(if $(Q),echo "  AR    $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/c%: $(BUILD)/obj/experiments/c%.o $(SUPPORT_LIB) $(LIB)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# A tool NAME is tools/NAME.c (or .cu) and, where it has any, modules of its
# own in tools/NAME/*.c, linked into build/NAME only (tools/whatif/). The
# second expansion lists them once the stem is known ($$* is NAME).
.SECONDEXPANSION:
$(BUILD)/%: $(BUILD)/obj/tools/%.o $$(addprefix $(BUILD)/obj/,$$(addsuffix .o,$$(wildcard tools/$$*/*.c))) $(LIB)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.c.o $(SUPPORT_LIB) $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) $(LDFLAGS) $^ -lcmocka $(LDLIBS) -o $@

# An experiment's or tool's object, whichever of .c or .cu it came from.
$(BUILD)/obj/experiments/%.o: $(BUILD)/obj/experiments/%.c.o
	$(Q)cp $< $@
$(BUILD)/obj/experiments/%.o: $(CU_BUILD)/obj/experiments/%.cu.o
	$(Q)cp $< $@
$(BUILD)/obj/tools/%.o: $(BUILD)/obj/tools/%.c.o
	$(Q)cp $< $@
$(BUILD)/obj/tools/%.o: $(CU_BUILD)/obj/tools/%.cu.o
	$(Q)cp $< $@

.SECONDARY:

# The fuzz target with a generator of well-formed traces in place of libFuzzer
# (tests/fuzz/fuzz_structured.c): make test fuzzes with the suite's compiler.
FUZZ_BIN := $(BUILD)/tests/fuzz_structured
$(FUZZ_BIN): $(BUILD)/obj/tests/fuzz/fuzz_structured.c.o $(BUILD)/obj/tests/fuzz/fuzz_replay.c.o $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

test-build: $(EXP_BIN) $(TOOL_BIN) $(TEST_BIN) $(FUZZ_BIN)

# ------------------------------------------------------------------ tests

# Everything that needs no GPU, all host code under ASan+UBSan.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) SETUP_GOALS= SAN=1 test-build
	$(Q)scripts/test build/san

test-gpu:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) SETUP_GOALS= all
	$(Q)scripts/test-gpu build

# ------------------------------------------------------------------ runs

# PyTorch's figures beside the suite's where torch and a GPU are here (on by
# default); PYTORCH=0: not (scripts/run-all --no-pytorch).
run-all:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) SETUP_GOALS= all
	$(Q)scripts/run-all $(if $(filter 0 no,$(PYTORCH)),--no-pytorch)

# A user's names (RUN, A, B, OUT, SNAPSHOT, CONTEXT) reach the scripts as
# environment variables of the targets that take them, "$$NAME" in the
# recipe, so that no shell parses their text; $(value) keeps make from
# expanding it (a "$(shell ...)" stays text), and as override make does not
# export it, expanded, to every recipe. A leading '-' is a name, never an
# option: "--", or "./" before it.
RUN ?= results/latest
override RUN := $(value RUN)
plots report: export RUN := $(RUN)
plots:
	$(Q)scripts/plot -- "$$RUN"

report: $(BUILD)/report
	$(Q)run=$$RUN; case $$run in -*) run=./$$run ;; esac; scripts/report --build $(BUILD) "$$run"

# Two runs side by side: COMPARE.md, compare.tsv and compare.png in OUT
# (default: the current folder). Runs from older commits compare too.
A   ?=
B   ?=
OUT ?=
override A := $(value A)
override B := $(value B)
override OUT := $(value OUT)
compare: export A := $(A)
compare: export B := $(B)
compare: export OUT := $(OUT)
compare: $(BUILD)/compare
	$(Q)test -n "$$A" && test -n "$$B" || { echo "usage: make compare A=results/<run> B=results/<run> [OUT=DIR]" >&2; exit 2; }
	$(Q)scripts/compare --build $(BUILD) --out "$${OUT:-.}" -- "$$A" "$$B"

readme:
	$(Q)scripts/readme

bench: $(BUILD)/replay $(BUILD)/gen_trace $(BUILD)/whatif
	$(Q)scripts/bench $(BUILD)

fuzz:
	$(Q)scripts/fuzz

# make whatif SNAPSHOT=run.pickle [CONTEXT=BYTES]: your run under each
# allocator setting and card size (build/whatif --help; tools/whatif.c).
SNAPSHOT ?=
CONTEXT  ?=
override SNAPSHOT := $(value SNAPSHOT)
override CONTEXT := $(value CONTEXT)
whatif: export SNAPSHOT := $(SNAPSHOT)
whatif: export CONTEXT := $(CONTEXT)
whatif: $(BUILD)/whatif
	$(Q)scripts/whatif --build $(BUILD) $(if $(CONTEXT),--context "$$CONTEXT") -- "$$SNAPSHOT"

deps:
	$(Q)scripts/deps

clean:
	rm -rf build

# An object or dependency file whose source is gone (removed, or renamed
# between .cu and .c, as c05_mixed_precision) is deleted before make reads
# the others: its .d names the old source as a prerequisite, so make stopped
# on it ("No rule to make target ...cu"), and a stale .cu.o left alone
# would be taken for the new object. build/obj/DIR/NAME.c.o (or .cu.o, .c.d,
# .cu.d) is DIR/NAME.c's.
$(shell find build -path '*/obj/*' \( -name '*.c.o' -o -name '*.cu.o' -o -name '*.c.d' -o -name '*.cu.d' \) 2>/dev/null | \
        while read -r f; do s=$${f#*/obj/}; s=$${s%.[od]}; [ -e "$$s" ] || rm -f "$$f"; done)
-include $(shell find build -name '*.d' 2>/dev/null)
