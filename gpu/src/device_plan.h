#pragma once
// The device memory a job needs at its peak on the CUDA backend, from what each part allocates, so
// that a plan which cannot fit is refused with the numbers before the job starts.
#include <cstdint>

#include "qs/pipeline/backend.h"

namespace qs::gpu {

std::int64_t cudaPeakDeviceBytes(const pipeline::DeviceWorkload& workload);

}  // namespace qs::gpu
