// mpiexec's way out of a failed job: park_other_threads() stops libpmix's
// progress thread before the PMIx directory is removed. Here a thread that
// keeps making a directory tree stands in for it (libpmix makes its dstore
// tree again when it serves a dying rank's connection late).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "pmi/mpiexec/cleanup.hpp"

namespace {

namespace fs = std::filesystem;

// Makes `dir`/sub/file again and again, as fast as it can.
void keep_making(const std::string &dir, std::atomic<int> &made) {
  const std::string sub = dir + "/sub";
  const std::string file = sub + "/file";
  for (;;) {
    ::mkdir(dir.c_str(), 0700);
    ::mkdir(sub.c_str(), 0700);
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    made.fetch_add(1);
  }
}

// In a child process (the parked thread never comes back): start the
// maker, park it, remove the tree, and exit with whether it stayed gone:
// 0 gone, 1 made again, 2 the maker had stopped by itself.
[[noreturn]] void child_run(const std::string &dir, bool park) {
  std::atomic<int> made{0};
  std::thread maker(keep_making, dir, std::ref(made));
  maker.detach();
  while (made.load() < 100) std::this_thread::yield();
  if (park) iris::mpiexec::park_other_threads();
  std::error_code ec;
  fs::remove_all(dir, ec);
  const int before = made.load();
  ::usleep(20'000);
  if (made.load() == before && !fs::exists(dir)) ::_exit(0);
  ::_exit(made.load() > before ? 1 : 2);
}

std::string fresh_dir(const char *name) {
  return (fs::temp_directory_path() / (std::string(name) + "." + std::to_string(::getpid())))
      .string();
}

// The child is a fresh run of this binary (it starts threads; a fork of
// a process with threads must not, under ThreadSanitizer).
TEST(MpiexecCleanup, ParkedThreadsMakeNothingAfterTheRemoval) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string dir = fresh_dir("iris-park-test");
  EXPECT_EXIT(child_run(dir, true), ::testing::ExitedWithCode(0), "")
      << dir << " was made again after the removal";
  EXPECT_FALSE(fs::exists(dir));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// The same without parking: the maker does make the tree again, so the
// test above can see the difference.
TEST(MpiexecCleanup, WithoutParkingTheTreeComesBack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string dir = fresh_dir("iris-park-control");
  EXPECT_EXIT(child_run(dir, false), ::testing::ExitedWithCode(1), "");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
