#include "cuda_check.h"

#include <string>

#include "qs/error.h"

namespace qs::gpu {
namespace {

[[noreturn]] void fail(const char* call, const std::string& what, const char* file, int line) {
    throw Error(std::string("CUDA: ") + call + " failed: " + what + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace

void checkCuda(cudaError_t status, const char* call, const char* file, int line) {
    if (status == cudaSuccess) return;
    cudaGetLastError();  // clear a non-sticky error so that later calls report their own
    fail(call, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status), file, line);
}

void checkCublas(cublasStatus_t status, const char* call, const char* file, int line) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    fail(call, std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status), file, line);
}

void checkCusolver(cusolverStatus_t status, const char* call, const char* file, int line) {
    if (status == CUSOLVER_STATUS_SUCCESS) return;
    fail(call, "cusolverStatus " + std::to_string(static_cast<int>(status)), file, line);
}

void checkLaunch(const char* kernel, const char* file, int line) {
    const cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess) return;
    fail(kernel, std::string("launch: ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status), file, line);
}

}  // namespace qs::gpu
