// The thread team's size (qs/thread_team.h): the free cores by the load other processes make.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <omp.h>

#include "qs/thread_team.h"

namespace qs {
namespace {

TEST(ThreadTeam, FreeCoresAreTheCoresLessTheOthersLoadAtLeastOne) {
    EXPECT_EQ(freeCoresFor(16, 0.0), 16);
    EXPECT_EQ(freeCoresFor(16, 0.4), 16);  // a load under half a core takes none
    EXPECT_EQ(freeCoresFor(16, 3.6), 12);
    EXPECT_EQ(freeCoresFor(2, 1.0), 1);   // the measured case: another process held one of 2 cores
    EXPECT_EQ(freeCoresFor(2, 12.0), 1);  // a saturated machine still runs on one thread
    EXPECT_EQ(freeCoresFor(1, 0.0), 1);
    EXPECT_EQ(freeCoresFor(8, -1.0), 8);  // no reading: all cores
}

TEST(ThreadTeam, TheReadingIsWithinTheMachine) {
    const double load = otherProcessesLoad();
    EXPECT_GE(load, 0.0);  // Linux has /proc/loadavg
    const int free = freeCores();
    EXPECT_GE(free, 1);
    EXPECT_LE(free, availableCores());
}

TEST(ThreadTeam, OmpNumThreadsWinsElseTheTeamIsTheFreeCores) {
    const char* before = std::getenv("OMP_NUM_THREADS");
    const std::string saved = before ? before : "";
    omp_set_num_threads(3);
    setenv("OMP_NUM_THREADS", "3", 1);
    EXPECT_EQ(sizeThreadTeamToFreeCores(), 3);  // the user's choice is kept
    unsetenv("OMP_NUM_THREADS");
    const int sized = sizeThreadTeamToFreeCores();
    EXPECT_GE(sized, 1);
    EXPECT_LE(sized, availableCores());
    EXPECT_EQ(omp_get_max_threads(), sized);
    if (before) setenv("OMP_NUM_THREADS", saved.c_str(), 1);
}

}  // namespace
}  // namespace qs
