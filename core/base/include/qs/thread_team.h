#pragma once
// One team of threads for the process: OpenMP's, which our parallel loops and OpenBLAS (its OpenMP
// build, cmake/QsBlas.cmake) share, sized to the cores that are free when the program starts.
// On a shared machine a team with more threads than free cores is slower than a smaller one: every
// parallel loop ends at a barrier that waits for the thread the scheduler has parked (measured here: 2
// threads ran 2x slower than 1 while another process held one of the 2 cores).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <omp.h>
#include <sched.h>

#if defined(QS_BLAS_OPENBLAS)
extern "C" int openblas_get_parallel(void);  // 0 sequential, 1 pthreads, 2 OpenMP
extern "C" void openblas_set_num_threads(int threads);
#endif

namespace qs {

// Cores left to this process when others keep `busy` cores' worth of threads runnable: at least 1.
inline int freeCoresFor(int cores, double busy) {
    const long others = std::lround(std::max(0.0, busy));
    return static_cast<int>(std::clamp<long>(cores - others, 1, std::max(cores, 1)));
}

// The cores of this process's affinity mask.
inline int availableCores() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(CPU_COUNT(&set), 1);
    return static_cast<int>(std::max(std::thread::hardware_concurrency(), 1u));
}

// What other processes keep busy, from /proc/loadavg: the smaller of the 1-minute load average and
// the runnable threads right now (the mean of a few samples 4 ms apart, less the reader itself). The
// average alone lags: it still counts this program's own previous job for a minute after it ends; the
// instant count alone is noisy. -1 without /proc.
inline double otherProcessesLoad() {
    double average = -1.0, runnable = 0.0;
    constexpr int kSamples = 5;
    for (int i = 0; i < kSamples; ++i) {
        std::ifstream in("/proc/loadavg");
        double one = 0.0, five = 0.0, fifteen = 0.0;
        long running = 0;
        char slash = 0;
        if (!(in >> one >> five >> fifteen >> running >> slash)) return -1.0;
        average = one;
        runnable += static_cast<double>(std::max(running - 1, 0L));
        if (i + 1 < kSamples) std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
    return std::min(average, runnable / kSamples);
}

inline int freeCores() { return freeCoresFor(availableCores(), std::max(otherProcessesLoad(), 0.0)); }

// Sizes the calling thread's team to freeCores() unless the user chose with OMP_NUM_THREADS; returns
// its size. OpenMP keeps the setting per thread, so the programs call this on the thread that runs a
// job, when the job starts (not the library, whose callers may have chosen otherwise).
// An OpenBLAS built with its own pthread pool would start a pool under each of our threads inside our
// parallel loops; it is limited to one thread, so only the OpenMP team runs. The programs link the
// OpenMP flavour by its folder (cmake/QsBlas.cmake), so this happens only where a build found no such
// folder, or LD_LIBRARY_PATH puts another flavour first.
inline int sizeThreadTeamToFreeCores() {
    if (std::getenv("OMP_NUM_THREADS") == nullptr) omp_set_num_threads(freeCores());
#if defined(QS_BLAS_OPENBLAS)
    if (openblas_get_parallel() == 1) openblas_set_num_threads(1);
#endif
    return omp_get_max_threads();
}

}  // namespace qs
