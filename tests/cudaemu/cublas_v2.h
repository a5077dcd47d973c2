/* tests/cudaemu/cublas_v2.h — stands in for the CUDA header of that name in the emulated build (see cudaemu.h). */
#include "cudaemu.h"
