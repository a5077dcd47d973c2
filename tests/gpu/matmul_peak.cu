/* tests/gpu/matmul_peak.cu — the bf16 matrix-multiply rate of this GPU through cuBLAS: the ceiling that
 * tests/gpu/run.sh measures MFU against, printed next to the datasheet's dense bf16 figure (989 TFLOP/s for
 * H100/H200 SXM).
 *
 * C[N,N] = A[N,N] B[N,N] with bf16 inputs and output and float32 accumulation (cublasGemmEx,
 * CUBLAS_COMPUTE_32F: what a bf16 training step's matmuls do). Inputs are random in [-1, 1) from a hash of the
 * index (zeros would run faster than real data), written on the device. Three untimed products first (module
 * load, cuBLAS's kernel choice), then `reps` products each between two CUDA events; the rate is 2 N^3 over the
 * median time. Every CUDA and cuBLAS call is checked: any error is printed and the exit status is 1; with no
 * device at all it prints "skipped: no CUDA device" and exits 77 (a CUDA error is not "no device").
 *
 *   matmul_peak [N=8192] [reps=20]      last line: RESULT matmul n=N tflops=X median_ms=Y
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>

#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "matmul_peak: %s: %s (%s)\n", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); exit(1); } } while (0)
#define CB(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "matmul_peak: %s: cuBLAS status %d (%s)\n", #call, (int)s_, cublasGetStatusString(s_)); exit(1); } } while (0)

__global__ void k_fill_random(__nv_bfloat16 *a, size_t n, uint32_t seed) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    a[i] = __float2bfloat16_rn((float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 8192, reps = argc > 2 ? atoi(argv[2]) : 20;
    if (N < 16 || reps < 1 || reps > 1000) { fprintf(stderr, "usage: matmul_peak [N >= 16] [1 <= reps <= 1000]\n"); return 2; }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    /* no device: none found, or no NVIDIA driver at all (as prism_cuda_device_probe decides); else an error */
    if (e == cudaErrorNoDevice || (e == cudaSuccess && ndev == 0) ||
        (e == cudaErrorInsufficientDriver && access("/proc/driver/nvidia/version", F_OK) != 0)) {
        printf("matmul_peak: skipped: no CUDA device\n");
        return 77;
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "matmul_peak: cudaGetDeviceCount: %s (%s)\n", cudaGetErrorString(e), cudaGetErrorName(e));
        return 1;
    }
    size_t n = (size_t)N * N;
    __nv_bfloat16 *A, *B, *C;
    CK(cudaMalloc(&A, n * sizeof *A));
    CK(cudaMalloc(&B, n * sizeof *B));
    CK(cudaMalloc(&C, n * sizeof *C));
    unsigned blocks = (unsigned)((n + 255) / 256);
    k_fill_random<<<blocks, 256>>>(A, n, 0x1234u);
    CK(cudaGetLastError());
    k_fill_random<<<blocks, 256>>>(B, n, 0x9876u);
    CK(cudaGetLastError());
    cublasHandle_t h;
    CB(cublasCreate(&h));
    float alpha = 1.0f, beta = 0.0f;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, A, CUDA_R_16BF, N, B, CUDA_R_16BF, N, &beta, C,
                        CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cudaDeviceSynchronize());
    float *ms = (float *)malloc(reps * sizeof(float));
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, 0));
        CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, A, CUDA_R_16BF, N, B, CUDA_R_16BF, N, &beta, C,
                        CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    qsort(ms, reps, sizeof(float), cmp_float);
    double med = ms[reps / 2], tflops = 2.0 * N * (double)N * N / (med * 1e-3) / 1e12;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s: bf16 matmul %dx%dx%d through cuBLAS (float32 accumulation, random inputs): median %.3f ms of %d "
           "(min %.3f, max %.3f) = %.1f TFLOP/s; datasheet dense bf16 989 TFLOP/s (H100/H200 SXM): %.0f%% of it\n",
           prop.name, N, N, N, med, reps, ms[0], ms[reps - 1], tflops, 100.0 * tflops / 989.0);
    printf("RESULT matmul n=%d tflops=%.1f median_ms=%.4f\n", N, tflops, med);
    cublasDestroy(h);
    cudaFree(A); cudaFree(B); cudaFree(C);
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    free(ms);
    return 0;
}
