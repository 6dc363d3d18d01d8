#include "pmi/mpiexec/cleanup.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "pmi/mpiexec/job.hpp"

namespace iris::mpiexec {
namespace {

// PMIx puts Unix sockets in this directory; sun_path holds 108 bytes, and
// the library appends its own file names.
constexpr std::size_t max_tmp_base_length = 64;

std::string tmp_base() {
  const char *env = std::getenv("TMPDIR");
  if (env != nullptr && env[0] == '/' && std::strlen(env) <= max_tmp_base_length) return env;
  return "/tmp";
}

}  // namespace

tmp_dir::tmp_dir() {
  std::string pattern = tmp_base() + "/iris-mpiexec." + std::to_string(::getpid()) + ".XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw launch_error("cannot create a directory " + pattern + ": " + std::strerror(errno));
  }
  path_ = buffer.data();
}

void tmp_dir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

void remove_shm_objects(std::string_view prefix) noexcept {
  if (prefix.empty()) return;  // would match everything
  DIR *dir = ::opendir("/dev/shm");
  if (dir == nullptr) return;
  std::vector<std::string> doomed;  // collected first: no unlinking while readdir walks
  while (const dirent *entry = ::readdir(dir)) {
    if (std::string_view(entry->d_name).starts_with(prefix)) doomed.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  for (const std::string &name : doomed) {
    std::error_code ignored;
    std::filesystem::remove_all("/dev/shm/" + name, ignored);
  }
}

watchdog::watchdog(std::chrono::milliseconds limit, std::function<void()> on_expire)
    : thread_([this, limit, on_expire = std::move(on_expire)] {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, limit, [this] { return cancelled_; })) on_expire();
      }) {}

watchdog::~watchdog() {
  {
    const std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace iris::mpiexec
