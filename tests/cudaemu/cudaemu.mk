# tests/cudaemu/cudaemu.mk — the CUDA emulator's part of the build, included by the Makefile after the
# libraries are defined. kernels/cuda/*.cu are rewritten by cu2cpp.sh into C++ and compiled against the
# emulator's stand-in CUDA headers in both precisions; the kernel tests and a prism-worker link against each.
# Uses from the Makefile: BUILD, CC, CFLAGS, OPT, PKG_CFLAGS, LDLIBS, CU_SRC, LIB_COMMON, LIB_WORKER, obj.
# Gives it: EMU_TESTS (built by `make tests`).

# ---- the CUDA emulator (tests/cudaemu): kernels/cuda/*.cu run on the CPU, checked in `make check` ---------
# Needs no nvcc: each .cu is rewritten by tests/cudaemu/cu2cpp.sh and compiled by the C++ compiler against the
# emulator's stand-in CUDA headers, in both precisions; test_cuda_kernels.c is linked against each
# (test_cuda_kernels.emu-bf16 runs fibers in forward order, .emu-fp32 in reverse: see cudaemu.h). x86-64 only.
CXX      ?= g++
ifeq ($(shell uname -m),x86_64)
EMU_PRECS := bf16 fp32
endif
EMU_CXXFLAGS = $(OPT) -g -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -MMD -MP \
               -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $(PKG_CFLAGS)
EMU_CU     := $(notdir $(basename $(CU_SRC)))
EMU_KOBJ   := $(patsubst kernels/%.c,$(BUILD)/obj/cudaemu/kernels/%.o,$(wildcard kernels/*.c))
EMU_TESTS  := $(foreach p,$(EMU_PRECS),$(BUILD)/tests/test_cuda_kernels.emu-$(p) $(BUILD)/prism-worker.emu-$(p)) \
              $(if $(EMU_PRECS),$(BUILD)/tests/test_cudaemu)

# ---- rules ----------------------------------------------------------------------------------------------
$(BUILD)/gen/cudaemu/%.cpp: kernels/cuda/%.cu tests/cudaemu/cu2cpp.sh
	@mkdir -p $(dir $@)
	bash tests/cudaemu/cu2cpp.sh $< > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/cudaemu/test_cudaemu.cpp: tests/cudaemu/test_cudaemu.cu tests/cudaemu/cu2cpp.sh
	@mkdir -p $(dir $@)
	bash tests/cudaemu/cu2cpp.sh $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/cudaemu/bf16/%.o: $(BUILD)/gen/cudaemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(BUILD)/obj/cudaemu/fp32/%.o: $(BUILD)/gen/cudaemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -DENABLE_FP32 -c $< -o $@
$(BUILD)/obj/cudaemu/bf16/rt_%.o: tests/cudaemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(BUILD)/obj/cudaemu/fp32/rt_%.o: tests/cudaemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -DCUDAEMU_DEFAULT_ORDER=1 -c $< -o $@
$(BUILD)/obj/cudaemu/%/rt_switch.o: tests/cudaemu/cudaemu_switch.S
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@
$(BUILD)/obj/cudaemu/kernels/%.o: kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -c $< -o $@
emu_objs = $(patsubst %,$(BUILD)/obj/cudaemu/$(1)/%.o,$(EMU_CU) rt_cudaemu rt_cublasemu rt_switch)
$(BUILD)/lib/libprism_cudaemu_bf16.a: $(call emu_objs,bf16)
$(BUILD)/lib/libprism_cudaemu_fp32.a: $(call emu_objs,fp32)
$(BUILD)/tests/test_cuda_kernels.emu-%: tests/unit/test_cuda_kernels.c tests/harness.h $(EMU_KOBJ) \
		$(BUILD)/lib/libprism_cudaemu_%.a $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -Itests -o $@ $< $(EMU_KOBJ) $(BUILD)/lib/libprism_cudaemu_$*.a $(LIB_COMMON) \
	  $(LDLIBS) -lstdc++
# prism-worker with its CUDA backend on the emulator: the trainer, checkpoints and resume on `--device 0`
# (tests/integration/test_train_cuda.sh)
$(BUILD)/prism-worker.emu-%: $(call obj,worker/main.c) $(LIB_WORKER) $(EMU_KOBJ) $(BUILD)/lib/libprism_cudaemu_%.a \
		$(LIB_COMMON)
	$(CC) $(CFLAGS) -o $@ $(call obj,worker/main.c) $(LIB_WORKER) $(EMU_KOBJ) $(BUILD)/lib/libprism_cudaemu_$*.a \
	  $(LIB_COMMON) $(LDLIBS) -lstdc++
# the Llama-style model's kernels (and its CUDA model) on the emulator, both precisions
EMU_TESTS += $(foreach p,$(EMU_PRECS),$(BUILD)/tests/test_cuda_llama.emu-$(p))
$(BUILD)/tests/test_cuda_llama.emu-%: tests/unit/test_cuda_llama.c tests/harness.h $(EMU_KOBJ) \
		$(BUILD)/lib/libprism_cudaemu_%.a $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPRISM_HAVE_CUDA -Itests -o $@ $< $(EMU_KOBJ) $(BUILD)/lib/libprism_cudaemu_$*.a $(LIB_COMMON) \
	  $(LDLIBS) -lstdc++
$(BUILD)/tests/test_cudaemu: $(BUILD)/obj/cudaemu/bf16/test_cudaemu.o $(BUILD)/lib/libprism_cudaemu_bf16.a
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -o $@ $^ $(LDLIBS)
