/* backend_badabi.c — a CUDA backend object of another ABI version, for tests/integration/test_cuda_backend.sh:
 * it exports MODEL_BACKEND_SYMBOL with abi = MODEL_BACKEND_ABI + BADABI_DELTA (default 1000) and no tables, so
 * the worker's loader must refuse it by its version alone, before reading anything else.
 * Built by the Makefile as $(BUILD)/tests/libbackend_badabi.so.
 */
#include "model.h"
#ifndef BADABI_DELTA
#define BADABI_DELTA 1000
#endif

__attribute__((visibility("default"))) const struct model_backend prism_model_backend = {
    MODEL_BACKEND_ABI + BADABI_DELTA, 0, 0, 0, "bad-abi", "none", 0, 0, 0,
};
