# prism-sweep — one build for the orchestrator, the worker, the kernels and the tests.
#
#   make            build prism-sweep, prism-worker, prism-data; and prism-cuda.so, the CUDA backend prism-worker
#                   loads only for a CUDA device (--device 0), when nvcc is found. No program links CUDA itself.
#   make check      install missing packages (deps), build, run every test; ends with "N passed, N failed"
#   make demo       a whole tiny sweep on this machine (see README)
#   make bench      benchmarks (figures go to docs/PERF.md by hand)
#   make fuzz       libFuzzer targets (clang)
#   make sanitize   the test suite built with ASan + UBSan
#   make deps       report ✓/✗ per dependency and install what is missing (root) or print the apt-get line
#
# Layout: common/ (shared C), orchestrator/ (prism-sweep), worker/ (prism-worker), dataprep/ (prism-data),
# kernels/ (CPU reference *.c, CUDA *.cu in kernels/cuda/). Every .c outside a program's main file goes into
# that directory's static library, so adding a module needs no Makefile edit.
# BUILD=dir puts every output under dir (several builds can share one tree).

# `make` with no target builds the programs: `all`, whatever rule comes first below (the version header's did).
.DEFAULT_GOAL := all

BUILD    ?= build
CC       ?= cc
NVCC     ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
PRECISION ?= bf16
OPT      ?= -O3 -march=x86-64-v2
SHELL    := /bin/bash
comma    := ,

PKGS      := sqlite3 libuv jansson libcurl openblas libpcre2-8
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS   ?= $(OPT) -g
# Every folder's headers for the tests, benches and fuzz targets; a folder's own sources see only their layer's
# (LAYER_INC below).
INC_ALL  := -Icommon -Iorchestrator -Iworker -Idataprep -Ikernels
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -fopenmp -MMD -MP \
            $(INC_ALL) -I$(BUILD)/gen $(PKG_CFLAGS)
# ---- layers: common → kernels / orchestrator / dataprep → worker (docs/CONTRIBUTING.md) ------------------
# A source includes its own folder, common/ and the folders below its layer, nothing else: the object rules
# compile FOLDER/x.c with INC_FOLDER instead of INC_ALL, so an include of a folder above fails to compile, and
# tools/layers.sh (run by `all`) also refuses one spelled with a path ("../worker/agent.h").
INC_common       := -Icommon
INC_kernels      := -Ikernels -Icommon
INC_orchestrator := -Iorchestrator -Icommon
INC_dataprep     := -Idataprep -Icommon
INC_worker       := -Iworker -Ikernels -Iorchestrator -Idataprep -Icommon
LAYER_CFLAGS = $(filter-out $(INC_ALL),$(CFLAGS)) $(or $(INC_$(firstword $(subst /, ,$<))),$(INC_ALL))
# prism-data's inputs: gzip (zlib), zstd (libzstd); parquet pages: snappy, lz4 (liblz4), brotli (libbrotlidec)
COMPRESS_LIBS := -lz -lzstd -lsnappy -llz4 -lbrotlidec
LDLIBS   := $(PKG_LIBS) -lhttp_parser $(COMPRESS_LIBS) -fopenmp -lm -lpthread

# ---- CUDA (only when nvcc is found) ---------------------------------------------------------------
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_SRC   := $(wildcard kernels/cuda/*.cu)
ifneq ($(NVCC),)
ifneq ($(CU_SRC),)
HAVE_CUDA := 1
NVFLAGS  ?= -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
            --use_fast_math --default-stream per-thread -Xcompiler -fPIC -Ikernels -Icommon -MMD -MP
ifeq ($(PRECISION),fp32)
NVFLAGS  += -DENABLE_FP32
endif
# cuDNN (kernels/cuda/attention_cudnn.cu): built in when cudnn.h is found; libcudnn is dlopen'ed at run time, so
# nothing links it and prism-cuda.so still loads where it is missing.
CUDNN_H  ?= $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h))
ifneq ($(CUDNN_H),)
NVFLAGS  += -DPRISM_HAVE_CUDNN -I$(dir $(CUDNN_H))
endif
# Only prism-cuda.so and the programs that call CUDA kernels directly (CUDA_LINKED, below) link these.
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcublasLt -lcublas -lcudart -lstdc++ -ldl \
             -Wl,-rpath,$(CUDA_HOME)/lib64
endif
endif

# ---- sources --------------------------------------------------------------------------------------
COMMON_SRC  := $(wildcard common/*.c)
KERNEL_SRC  := $(wildcard kernels/*.c)
ORCH_MAIN   := orchestrator/main.c
ORCH_SRC    := $(filter-out $(ORCH_MAIN),$(wildcard orchestrator/*.c))
WORKER_MAINS := worker/main.c
WORKER_SRC  := $(filter-out $(WORKER_MAINS),$(wildcard worker/*.c))
DATA_MAIN   := dataprep/main.c
DATA_SRC    := $(filter-out $(DATA_MAIN),$(wildcard dataprep/*.c))
SQL_SRC     := $(wildcard sql/*.sql)
GEN_SQL     := $(BUILD)/gen/sql_embed.c

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# ---- the version (`--version` of all three programs, common/version.h) -------------------------------
# git describe of this tree; from a tarball without .git, the first filled-in line of VERSION (git archive's
# export-subst writes the describe and the commit there). $(BUILD)/gen/version_gen.h is rewritten only when it
# changes, so a new commit recompiles version.c and relinks, nothing more.
PRISM_VERSION := $(if $(wildcard .git),$(shell git describe --always --dirty --tags 2>/dev/null))
PRISM_VERSION := $(or $(PRISM_VERSION),$(shell grep -v -m1 -e '^\$$Format' -e '^$$' VERSION 2>/dev/null),unknown)
GEN_VERSION := $(BUILD)/gen/version_gen.h
$(GEN_VERSION): FORCE
	@mkdir -p $(dir $@)
	@printf '#define PRISM_VERSION_STRING "%s"\n' '$(subst ','',$(subst ",,$(PRISM_VERSION)))' | cmp -s - $@ || \
	  printf '#define PRISM_VERSION_STRING "%s"\n' '$(subst ','',$(subst ",,$(PRISM_VERSION)))' > $@
$(BUILD)/obj/common/version.o: $(GEN_VERSION)
.PHONY: version
version:
	@echo '$(subst ','',$(PRISM_VERSION))'
LIB_COMMON  := $(BUILD)/lib/libprism_common.a
LIB_KERNELS := $(BUILD)/lib/libprism_kernels.a
LIB_ORCH    := $(BUILD)/lib/libprism_orch.a
LIB_WORKER  := $(BUILD)/lib/libprism_worker.a
LIB_DATA    := $(BUILD)/lib/libprism_data.a
LIB_CUDA    := $(if $(HAVE_CUDA),$(BUILD)/lib/libprism_cuda.a)
ALL_LIBS    := $(LIB_ORCH) $(LIB_WORKER) $(LIB_DATA) $(LIB_KERNELS) $(LIB_COMMON)

PROGS := $(BUILD)/prism-sweep $(BUILD)/prism-worker $(BUILD)/prism-data
# the CUDA backend (kernels/model.h): loaded by prism-worker from next to itself, or from $PRISM_CUDA_BACKEND
CUDA_SO := $(if $(HAVE_CUDA),$(BUILD)/prism-cuda.so)
TEST_SRC  := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps check demo bench fuzz sanitize clean install
# Keep every intermediate file (the emulator's generated .cpp and objects come from chained pattern rules,
# which make would otherwise delete after each build, rebuilding them every time).
.SECONDARY:
all: $(BUILD)/.layers-ok $(PROGS) $(CUDA_SO)
	@printf '  built: %s\n' "$(PROGS)"
	@printf '  %s\n' "$(if $(HAVE_CUDA),$(if $(CUDNN_H),✓ cuDNN attention: $(CUDNN_H) (libcudnn.so.9 opened at run time; PRISM_ATTENTION=cudnn|fused|auto),✗ cuDNN attention: cudnn.h not found$(comma) the fused kernel runs every layer),✗ cuDNN attention: no CUDA build)"
	@printf '  %s\n' "$(if $(HAVE_CUDA),✓ CUDA backend: $(CUDA_SO) (prism-worker loads it only for a CUDA device),✗ CUDA backend: nvcc not found, prism-cuda.so not built (CPU only; --device 0 says so))"

# ---- dependencies: report ✓/✗, install what is missing ---------------------------------------------
deps:
	@bash tools/deps.sh

$(BUILD)/.deps-ok: tools/deps.sh
	@bash tools/deps.sh && mkdir -p $(BUILD) && touch $@

# ---- rules ----------------------------------------------------------------------------------------
# the include arrows between folders (tools/layers.sh): a back-arrow fails the build, naming file:line
$(BUILD)/.layers-ok: tools/layers.sh $(wildcard common/*.[ch] kernels/*.[ch] kernels/cuda/*.cu kernels/cuda/*.h orchestrator/*.[ch] dataprep/*.[ch] worker/*.[ch])
	@bash tools/layers.sh . && mkdir -p $(BUILD) && touch $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LAYER_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# The migrations' names, rewritten only when the list changes: a migration renamed (renumbered) or removed, whose
# file is no newer than the generated table, still regenerates it.
SQL_LIST    := $(BUILD)/gen/sql_files.txt
$(SQL_LIST): FORCE
	@mkdir -p $(dir $@)
	@echo '$(SQL_SRC)' | cmp -s - $@ || echo '$(SQL_SRC)' > $@
$(GEN_SQL): $(SQL_SRC) $(SQL_LIST) tools/embed_sql.sh
	@mkdir -p $(dir $@)
	bash tools/embed_sql.sh $(SQL_SRC) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/sql_embed.o: $(GEN_SQL)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC)) $(BUILD)/empty.o
$(LIB_KERNELS): $(call obj,$(KERNEL_SRC)) $(BUILD)/empty.o
$(LIB_ORCH): $(call obj,$(ORCH_SRC)) $(BUILD)/obj/gen/sql_embed.o
$(LIB_WORKER): $(call obj,$(WORKER_SRC)) $(BUILD)/empty.o
$(LIB_DATA): $(call obj,$(DATA_SRC)) $(BUILD)/empty.o
$(LIB_CUDA): $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CU_SRC))
# deploy/slurm/prism-worker.sbatch travels inside prism-sweep (`prism-sweep launch slurm` prints it)
GEN_DEPLOY  := $(BUILD)/gen/deploy_embed.c
$(GEN_DEPLOY): deploy/slurm/prism-worker.sbatch tools/embed_text.sh
	@mkdir -p $(dir $@)
	bash tools/embed_text.sh deploy/slurm/prism-worker.sbatch > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/deploy_embed.o: $(GEN_DEPLOY)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(LIB_ORCH): $(BUILD)/obj/gen/deploy_embed.o
$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	@ar rcs $@ $(filter %.o,$^)

# Each archive also depends on the list of its members, rewritten only when that list changes: a source added
# (whatever its mtime, e.g. older than the archive after a merge) or removed rebuilds the archive, so no stale
# member is linked and no new one is left out of an incremental build.
define archive_members
$(1): $(1).members
$(1).members: FORCE
	@mkdir -p $$(dir $$@)
	@printf '%s\n' $(2) | cmp -s - $$@ || printf '%s\n' $(2) > $$@
endef
$(eval $(call archive_members,$(LIB_COMMON),$(call obj,$(COMMON_SRC))))
$(eval $(call archive_members,$(LIB_KERNELS),$(call obj,$(KERNEL_SRC))))
$(eval $(call archive_members,$(LIB_ORCH),$(call obj,$(ORCH_SRC))))
$(eval $(call archive_members,$(LIB_WORKER),$(call obj,$(WORKER_SRC))))
$(eval $(call archive_members,$(LIB_DATA),$(call obj,$(DATA_SRC))))
$(if $(LIB_CUDA),$(eval $(call archive_members,$(LIB_CUDA),$(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CU_SRC)))))
.PHONY: FORCE
FORCE:

$(BUILD)/empty.o:
	@mkdir -p $(dir $@)
	echo 'static int prism_empty_unit;' | $(CC) -x c -c - -o $@

$(BUILD)/prism-sweep: $(call obj,$(ORCH_MAIN)) $(LIB_ORCH) $(LIB_COMMON)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/prism-worker: $(call obj,worker/main.c) $(LIB_WORKER) $(LIB_KERNELS) $(LIB_COMMON)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- test hooks (common/testhook.h): compiled in only for the tests. Every source that calls one is compiled a
# second time with -DPRISM_TEST_HOOKS into $(BUILD)/obj/hooks/; those objects, ahead of the archives (whose members
# of the same name are then never pulled in), make the unit tests and $(BUILD)/hooks/prism-{sweep,worker}, which an
# integration test runs while it sets a hook (tests/lib.sh's bin). The shipped $(BUILD)/prism-* have none (test_testhooks.sh).
HOOK_SRC := $(shell grep -lE 'testhook_fault|store_fault_point' $(ORCH_SRC) $(WORKER_SRC) $(KERNEL_SRC) $(DATA_SRC) /dev/null)
HOOK_OBJ := $(patsubst %.c,$(BUILD)/obj/hooks/%.o,$(HOOK_SRC))
HOOK_PROGS := $(BUILD)/hooks/prism-sweep $(BUILD)/hooks/prism-worker
$(BUILD)/obj/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LAYER_CFLAGS) -DPRISM_TEST_HOOKS -c $< -o $@
$(BUILD)/hooks/prism-sweep: $(call obj,$(ORCH_MAIN)) $(filter $(BUILD)/obj/hooks/orchestrator/%,$(HOOK_OBJ)) $(LIB_ORCH) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
# the CUDA backend is loaded from next to the worker: the hooked one finds the shipped one there
$(BUILD)/hooks/prism-worker: $(call obj,worker/main.c) $(filter $(BUILD)/obj/hooks/worker/%,$(HOOK_OBJ)) $(LIB_WORKER) \
                             $(LIB_KERNELS) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
	$(if $(CUDA_SO),ln -sf ../prism-cuda.so $(dir $@)prism-cuda.so)

# ---- the CUDA backend as a shared object: the kernels, the two model tables and the one symbol the worker's
# loader resolves (prism_model_backend; kernels/cuda/backend.map keeps every other symbol local). The C it uses
# (kernels/model.c's tensor table, common/util.c) goes in as position-independent objects. -z defs: every
# symbol resolves at link time, so a load never fails on a missing one.
PIC_OBJ := $(BUILD)/obj/pic/kernels/model.o $(BUILD)/obj/pic/common/util.o
$(BUILD)/obj/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LAYER_CFLAGS) -fPIC -c $< -o $@
BACKEND_LDFLAGS := -shared -Wl,--version-script=kernels/cuda/backend.map -Wl,-z,defs
$(BUILD)/prism-cuda.so: $(LIB_CUDA) $(PIC_OBJ) kernels/cuda/backend.map
	$(CC) $(OPT) -o $@ $(BACKEND_LDFLAGS) -Wl,--whole-archive $(LIB_CUDA) -Wl,--no-whole-archive $(PIC_OBJ) \
	  $(CUDA_LIBS) -lm

# The programs that call CUDA kernels directly are linked against the CUDA objects and libraries (when nvcc is
# found) and built with -DPRISM_HAVE_CUDA; every other test and bench links no CUDA library.
CUDA_LINKED := $(BUILD)/tests/test_cuda_kernels $(BUILD)/tests/test_cuda_llama $(BUILD)/tests/test_cuda_cudnn \
               $(BUILD)/bench/bench_cuda_gpt2 $(BUILD)/bench/bench_cuda_attention
ifdef HAVE_CUDA
$(CUDA_LINKED): $(LIB_CUDA)
$(CUDA_LINKED): CUDA_LINK_CFLAGS := -DPRISM_HAVE_CUDA
$(CUDA_LINKED): CUDA_LINK_ARCHIVE := $(LIB_CUDA)
$(CUDA_LINKED): CUDA_LINK_LIBS := $(CUDA_LIBS)
# The .cu sources that call a test hook (attention_cudnn.cu's PRISM_CUDNN_SEED_BUG) are compiled a second time with
# -DPRISM_TEST_HOOKS into $(BUILD)/obj/hooks/, as the C ones are; the kernel tests link them ahead of libprism_cuda.a
# (inside the group: the archive's members of the same name are then never pulled in). prism-cuda.so has none.
CU_HOOK_OBJ := $(patsubst %.cu,$(BUILD)/obj/hooks/%.cu.o,$(shell grep -l testhook_fault $(CU_SRC) /dev/null))
$(BUILD)/obj/hooks/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -DPRISM_TEST_HOOKS -c $< -o $@
$(filter $(BUILD)/tests/%,$(CUDA_LINKED)): $(CU_HOOK_OBJ)
$(filter $(BUILD)/tests/%,$(CUDA_LINKED)): CUDA_LINK_ARCHIVE := $(CU_HOOK_OBJ) $(LIB_CUDA)
endif
# prism-data needs shards, the tokenizer, jansson/PCRE2 and the decompressors only: no kernels, no CUDA, no server libraries
DATA_LDLIBS := $(shell pkg-config --libs jansson libpcre2-8 2>/dev/null) $(COMPRESS_LIBS) -fopenmp -lm -lpthread
$(BUILD)/prism-data: $(call obj,$(DATA_MAIN)) $(LIB_DATA) $(LIB_COMMON)
	$(CC) $(CFLAGS) -o $@ $^ $(DATA_LDLIBS)

# A unit test links against every library: tests/unit/test_X.c -> $(BUILD)/tests/test_X
$(BUILD)/tests/%: tests/unit/%.c tests/harness.h $(ALL_LIBS) $(HOOK_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CUDA_LINK_CFLAGS) -Itests -o $@ $< $(HOOK_OBJ) -Wl,--start-group $(ALL_LIBS) $(CUDA_LINK_ARCHIVE) -Wl,--end-group \
	  $(LDLIBS) $(CUDA_LINK_LIBS)
# the corpus replay test #includes the libFuzzer targets (fuzz/fuzz_*.c)
$(BUILD)/tests/test_fuzz_corpus: $(wildcard fuzz/fuzz_*.c fuzz/*.h)

$(BUILD)/bench/%: bench/%.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CUDA_LINK_CFLAGS) -Itests -o $@ $< -Wl,--start-group $(ALL_LIBS) $(CUDA_LINK_ARCHIVE) -Wl,--end-group \
	  $(LDLIBS) $(CUDA_LINK_LIBS)

# ---- the CUDA emulator (tests/cudaemu): its variables and rules live in their own fragment -----------------
include tests/cudaemu/cudaemu.mk

# ---- the README's commands ------------------------------------------------------------------------
check: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory all tests
	@BUILD=$(BUILD) bash tests/run.sh

.PHONY: tests
tests: $(PROGS) $(HOOK_PROGS) $(TEST_BINS) $(EMU_TESTS) $(BUILD)/bench/bench_fleet   # test_fleet_bench.sh runs it
# an LD_PRELOAD shim that slows and logs fsync/fdatasync (test_durability.sh)
tests: $(BUILD)/tests/libfsync_delay.so
$(BUILD)/tests/libfsync_delay.so: tests/shim/fsync_delay.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -shared -fPIC -o $@ $< -ldl
# a CUDA backend object of another ABI version (test_cuda_backend.sh: the loader refuses it)
tests: $(BUILD)/tests/libbackend_badabi.so
$(BUILD)/tests/libbackend_badabi.so: tests/shim/backend_badabi.c kernels/model.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Ikernels -shared -fPIC -o $@ $<
# an LD_PRELOAD shim: file locks that do nothing or fail with ENOLCK (test_durability.sh)
tests: $(BUILD)/tests/liblocks.so
$(BUILD)/tests/liblocks.so: tests/shim/locks.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -shared -fPIC -o $@ $< -ldl
# an LD_PRELOAD shim that steps the wall clock (test_lease_clock.sh)
tests: $(BUILD)/tests/libclock_step.so
$(BUILD)/tests/libclock_step.so: tests/shim/clock_step.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -shared -fPIC -o $@ $<

# The demo trains on the CPU: where nvcc is found it builds a CPU-only copy in $(BUILD)/cpu (nvcc alone takes
# minutes; the CUDA build in $(BUILD) is left as it is), else it uses $(BUILD). In parallel on every core unless
# make already runs with -j (its jobserver then shares them).
DEMO_BUILD := $(if $(HAVE_CUDA),$(BUILD)/cpu,$(BUILD))
demo: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2)) \
	  BUILD=$(DEMO_BUILD) NVCC= all
	@BUILD=$(DEMO_BUILD) bash tools/demo.sh

bench: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@BUILD=$(BUILD) bash bench/run.sh

# The whole suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer (leak checks on).
sanitize: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory BUILD=$(BUILD)-asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer" all tests
	@ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  TIMEOUT_SCALE=$${TIMEOUT_SCALE:-4} BUILD=$(BUILD)-asan bash tests/run.sh

fuzz:
	@bash tools/deps.sh --fuzz
	@BUILD=$(BUILD) bash fuzz/run.sh

# make install [PREFIX=/usr/local] [DESTDIR=]: the programs (and the CUDA backend beside prism-worker, which loads
# it from there) into PREFIX/bin, the page into PREFIX/share/prism-sweep/web, where an installed `prism-sweep serve`
# finds it without --web (orchestrator/serve.c).
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/prism-sweep/web
	install -m 0755 $(PROGS) $(wildcard $(CUDA_SO)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(wildcard web/*.*) $(DESTDIR)$(PREFIX)/share/prism-sweep/web/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
