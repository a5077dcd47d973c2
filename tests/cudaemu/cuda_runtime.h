/* tests/cudaemu/cuda_runtime.h — stands in for the CUDA header of that name in the emulated build (see cudaemu.h). */
#include "cudaemu.h"
