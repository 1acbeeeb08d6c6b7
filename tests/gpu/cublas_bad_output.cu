// cuBLAS SGEMM given an output pointer into memory no allocation covers (1 TiB past a real
// buffer): the library's kernel faults (Xid 31, cudaErrorIllegalAddress at the next call). For
// `run --record`: the faulting kernel is cuBLAS's, and the fault address lies in no allocation.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  const int n = 512;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cudaMalloc(&a, n * n * sizeof(float));
  cudaMalloc(&b, n * n * sizeof(float));
  cudaMalloc(&c, n * n * sizeof(float));
  float* bad_c = c + (size_t{1} << 38);  // 1 TiB past the output buffer
  cublasHandle_t handle;
  cublasCreate(&handle);
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, bad_c, n);
  cudaError_t err = cudaDeviceSynchronize();
  std::fprintf(stderr, "cublas_bad_output: cublasSgemm %d, cudaDeviceSynchronize: %s (%s)\n", static_cast<int>(s),
               cudaGetErrorName(err), cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
