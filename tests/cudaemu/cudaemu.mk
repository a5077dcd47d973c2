# tests/cudaemu/cudaemu.mk — the CUDA emulator's part of the build, included by the Makefile after the
# libraries are defined. kernels/cuda/*.cu are rewritten by cu2cpp.sh into C++ and compiled against the
# emulator's stand-in CUDA headers in both precisions; the kernel tests link against each, and each becomes a
# backend object (prism-cuda.emu-bf16.so, .emu-fp32.so) that the ordinary prism-worker loads, as it loads
# prism-cuda.so on a GPU: prism-worker.emu-bf16 / .emu-fp32 are two-line scripts that run build/prism-worker
# with PRISM_CUDA_BACKEND naming the emulator's object.
# Uses from the Makefile: BUILD, CC, CFLAGS, OPT, PKG_CFLAGS, LDLIBS, CU_SRC, LIB_COMMON, LIB_KERNELS, PIC_OBJ,
# BACKEND_LDFLAGS.
# Gives it: EMU_TESTS (built by `make tests`).

# ---- the CUDA emulator (tests/cudaemu): kernels/cuda/*.cu run on the CPU, checked in `make check` ---------
# Needs no nvcc: each .cu is rewritten by tests/cudaemu/cu2cpp.sh and compiled by the C++ compiler against the
# emulator's stand-in CUDA headers, in both precisions; test_cuda_kernels.c is linked against each
# (test_cuda_kernels.emu-bf16 runs fibers in forward order, .emu-fp32 in reverse: see cudaemu.h). x86-64 only.
CXX      ?= g++
ifeq ($(shell uname -m),x86_64)
EMU_PRECS := bf16 fp32
endif
# -DPRISM_TEST_HOOKS: every emulated object is a test artefact, so it carries the .cu sources' test hooks
# (common/testhook.h; attention_cudnn.cu's PRISM_CUDNN_SEED_BUG), which the nvcc-built prism-cuda.so does not.
EMU_CXXFLAGS = $(OPT) -g -fPIC -fvisibility=hidden -DPRISM_TEST_HOOKS -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -MMD -MP \
               -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $(PKG_CFLAGS)
EMU_CU     := $(notdir $(basename $(CU_SRC)))
EMU_TESTS  := $(foreach p,$(EMU_PRECS),$(BUILD)/tests/test_cuda_kernels.emu-$(p) $(BUILD)/prism-worker.emu-$(p) \
                $(BUILD)/prism-cuda.emu-$(p).so) \
              $(if $(EMU_PRECS),$(BUILD)/tests/test_cudaemu)

# ---- rules ----------------------------------------------------------------------------------------------
$(BUILD)/gen/cudaemu/%.cpp: kernels/cuda/%.cu tests/cudaemu/cu2cpp.sh
	@mkdir -p $(dir $@)
	bash tests/cudaemu/cu2cpp.sh $< > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/cudaemu/test_cudaemu.cpp: tests/cudaemu/test_cudaemu.cu tests/cudaemu/cu2cpp.sh
	@mkdir -p $(dir $@)
	bash tests/cudaemu/cu2cpp.sh $< > $@.tmp && mv $@.tmp $@
# The objects depend on this file too, where their flags live: a changed flag (-fPIC for the backend objects)
# rebuilds them in an old build tree instead of linking stale ones.
$(BUILD)/obj/cudaemu/bf16/%.o: $(BUILD)/gen/cudaemu/%.cpp tests/cudaemu/cudaemu.mk
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(BUILD)/obj/cudaemu/fp32/%.o: $(BUILD)/gen/cudaemu/%.cpp tests/cudaemu/cudaemu.mk
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -DENABLE_FP32 -c $< -o $@
$(BUILD)/obj/cudaemu/bf16/rt_%.o: tests/cudaemu/%.cpp tests/cudaemu/cudaemu.mk
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(BUILD)/obj/cudaemu/fp32/rt_%.o: tests/cudaemu/%.cpp tests/cudaemu/cudaemu.mk
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -DCUDAEMU_DEFAULT_ORDER=1 -c $< -o $@
$(BUILD)/obj/cudaemu/%/rt_switch.o: tests/cudaemu/cudaemu_switch.S
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@
emu_objs = $(patsubst %,$(BUILD)/obj/cudaemu/$(1)/%.o,$(EMU_CU) rt_cudaemu rt_cublasemu rt_cudnnemu rt_switch)
$(BUILD)/lib/libprism_cudaemu_bf16.a: $(call emu_objs,bf16)
$(BUILD)/lib/libprism_cudaemu_fp32.a: $(call emu_objs,fp32)
# the kernel tests link the emulated kernels in (so their backend table is found linked in, nothing is loaded)
emu_link = -Wl,--start-group $(LIB_KERNELS) $(BUILD)/lib/libprism_cudaemu_$(1).a $(LIB_COMMON) -Wl,--end-group \
           $(LDLIBS) -lstdc++
$(BUILD)/tests/test_cuda_kernels.emu-%: tests/unit/test_cuda_kernels.c tests/harness.h $(LIB_KERNELS) \
		$(BUILD)/lib/libprism_cudaemu_%.a $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -Itests -o $@ $< $(call emu_link,$*)
# The emulated CUDA backend as the object prism-worker loads (-z defs: every symbol resolved here), and the
# prism-worker that loads it: the trainer, checkpoints and resume on `--device 0` (tests/integration/
# test_train_cuda.sh; test_cuda_backend.sh checks that this object is the one loaded).
# (testhook.o: the hooks' environment read, which the emulated objects reference.)
EMU_PIC_OBJ := $(PIC_OBJ) $(BUILD)/obj/pic/common/testhook.o
$(BUILD)/prism-cuda.emu-%.so: $(BUILD)/lib/libprism_cudaemu_%.a $(EMU_PIC_OBJ) kernels/cuda/backend.map
	$(CXX) $(OPT) -o $@ $(BACKEND_LDFLAGS) -Wl,--whole-archive $(BUILD)/lib/libprism_cudaemu_$*.a \
	  -Wl,--no-whole-archive $(EMU_PIC_OBJ) $(filter -L% -lopenblas,$(PKG_LIBS)) -fopenmp -lm -lpthread
$(BUILD)/prism-worker.emu-%: tests/cudaemu/cudaemu.mk | $(BUILD)/prism-worker $(BUILD)/prism-cuda.emu-%.so
	printf '#!/bin/sh\n# prism-worker on the CUDA emulator: the same binary, loading the emulated backend\n%s\n' \
	  'd=$$(dirname "$$0"); PRISM_CUDA_BACKEND="$$d/prism-cuda.emu-$*.so" exec "$$d/prism-worker" "$$@"' > $@.tmp
	chmod +x $@.tmp && mv $@.tmp $@
# the Llama-style model's kernels (and its CUDA model) on the emulator, both precisions
EMU_TESTS += $(foreach p,$(EMU_PRECS),$(BUILD)/tests/test_cuda_llama.emu-$(p))
$(BUILD)/tests/test_cuda_llama.emu-%: tests/unit/test_cuda_llama.c tests/harness.h $(LIB_KERNELS) \
		$(BUILD)/lib/libprism_cudaemu_%.a $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -Itests -o $@ $< $(call emu_link,$*)
# the cuDNN attention backend against the emulator's cuDNN shim (tests/cudaemu/cudnnemu.cpp), both precisions
EMU_TESTS += $(foreach p,$(EMU_PRECS),$(BUILD)/tests/test_cuda_cudnn.emu-$(p))
$(BUILD)/tests/test_cuda_cudnn.emu-%: tests/unit/test_cuda_cudnn.c tests/harness.h tests/cuda_test_lib.h $(LIB_KERNELS) \
		$(BUILD)/lib/libprism_cudaemu_%.a $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -Itests -o $@ $< $(call emu_link,$*)
$(BUILD)/tests/test_cudaemu: $(BUILD)/obj/cudaemu/bf16/test_cudaemu.o $(BUILD)/lib/libprism_cudaemu_bf16.a
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -o $@ $^ $(LDLIBS)
