// A rank for the launcher tests: uses the pmi client directly (no MPI
// library) and behaves as the first argument says. Every line it prints
// starts with a word the test looks for, then the rank.
//
//   card             exchange business cards with every rank and check them
//   info             print rank, size, backend, job id and nodes
//   exit R CODE      rank R exits with CODE; the others wait in a fence
//   exit0 R          rank R exits 0 without finalizing; the others wait
//   segv R           rank R dereferences a null pointer; the others wait
//   abort R CODE     rank R aborts the job through the client
//   hang             every rank waits to be killed
//   stubborn         every rank ignores SIGINT and SIGTERM and waits to be killed
//   shm              every rank creates a /dev/shm object and exits normally
//   shm-kill R       every rank creates a /dev/shm object, then rank R SIGKILLs itself
//   shm-hang         every rank creates a /dev/shm object, then waits to be killed
//   recover R [after MS] [quit C] [early-fence] [fence] [exit S CODE]
//                    (for --enable-recovery) every rank watches for failures,
//                    then rank R SIGKILLs itself (MS ms after their fence); the others wait up to 5
//                    s for the launcher's word and print it, optionally fence over the whole job,
//                    sleep until 1 s has passed, finalize, and rank S then exits with CODE
//   env NAME...      print each variable's value
//   affinity         print the cpus this rank may run on
//   cwd              print the working directory and $PWD
//   stdin            print what stdin holds
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pmi/pmi.hpp"

namespace {

namespace pmi = iris::pmi;

// No rank of a test lives longer than this, whatever the launcher does.
constexpr unsigned life_limit_s = 60;

// One write(2) per line: lines from different ranks must not interleave.
void say(const char *format, ...) {
  char line[4096];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n <= 0) return;
  std::size_t length = std::min(static_cast<std::size_t>(n), sizeof line - 2);
  line[length++] = '\n';
  [[maybe_unused]] const ssize_t ignored = ::write(STDOUT_FILENO, line, length);
}

std::string hex_of(std::string_view text) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : text) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

// A card as long as the contract allows, different for every rank.
std::string big_card(int rank) {
  std::string card = hex_of("rank " + std::to_string(rank) + " ");
  while (card.size() < pmi::max_value_length) card += static_cast<char>('a' + card.size() % 6);
  return card;
}

void print_info(const pmi::client &c) {
  std::string nodes;
  for (int r = 0; r < c.size(); ++r) nodes += (r ? "," : "") + std::to_string(c.node_of(r));
  say("info %d size %d backend %.*s job %.*s singleton %d nodes %s prefix %s", c.rank(), c.size(),
      static_cast<int>(c.backend().size()), c.backend().data(), static_cast<int>(c.job_id().size()),
      c.job_id().data(), c.singleton() ? 1 : 0, nodes.c_str(),
      pmi::shm_name_prefix(c.job_id()).c_str());
}

int exchange_cards(pmi::client &c) {
  c.put("card", hex_of("card of rank " + std::to_string(c.rank())));
  c.put("big", big_card(c.rank()));
  c.commit();
  c.fence();
  int bad = 0;
  for (int r = 0; r < c.size(); ++r) {
    const std::string card = c.get(r, "card");
    if (card != hex_of("card of rank " + std::to_string(r))) {
      say("cards bad %d: card of rank %d is '%s'", c.rank(), r, card.c_str());
      ++bad;
    }
    if (c.get(r, "big") != big_card(r)) {
      say("cards bad %d: big card of rank %d differs", c.rank(), r);
      ++bad;
    }
  }
  if (bad == 0) say("cards ok %d", c.rank());
  return bad == 0 ? 0 : 1;
}

// Everyone prints its pid, then meets in a fence, so the test knows every
// pid before any rank misbehaves.
void announce(pmi::client &c) {
  say("pid %d %d", c.rank(), static_cast<int>(::getpid()));
  c.fence();
}

// The ranks that do not fail wait where a real job would: in a collective
// that the failed rank never joins.
[[noreturn]] void wait_to_be_killed(pmi::client &c) {
  say("ready %d", c.rank());
  try {
    c.fence();
  } catch (const pmi::error &) {
    // PMIx may fail the fence once a member is gone; keep waiting anyway.
  }
  for (;;) ::pause();
}

std::string create_shm_object(const pmi::client &c) {
  const std::string name = pmi::shm_name_prefix(c.job_id()) + "test-" + std::to_string(c.rank());
  const int fd = ::shm_open(("/" + name).c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) throw pmi::error("shm_open " + name + " failed");
  ::close(fd);
  say("shm %d %s", c.rank(), name.c_str());
  return name;
}

std::string affinity_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) list += (list.empty() ? "" : ",") + std::to_string(cpu);
  }
  return list;
}

void print_stdin(int rank) {
  std::string input;
  char buf[256];
  for (ssize_t n; (n = ::read(STDIN_FILENO, buf, sizeof buf)) > 0;) input.append(buf, n);
  while (!input.empty() && input.back() == '\n') input.pop_back();
  say("stdin %d '%s'", rank, input.c_str());
}

// A real fault, on a page that exists but may not be touched: a null store
// is caught by UBSan first, and a sanitizer's SIGSEGV handler would turn the
// fault into an ordinary exit.
[[noreturn]] void segfault() {
  const rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // no core files in the build tree
  ::signal(SIGSEGV, SIG_DFL);
  void *page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *static_cast<volatile int *>(page) = 1;
  std::abort();  // not reached
}

// CLOCK_MONOTONIC is the same clock in every process of the host: the test
// compares the dying rank's time with the survivors'.
long long now_us() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000 + t.tv_nsec / 1000;
}

// Written by the client's event thread: which rank died, and when we heard.
// Only the victim's reports count: a survivor that finished and exited
// first is reported too (mpiexec tells the others it is gone, so that an
// agreement in MPI_Finalize does not wait for it).
std::atomic<int> victim_rank{-1};
std::atomic<int> failed_rank{-1};
std::atomic<long long> failed_at_us{0};
std::atomic<int> failures_seen{0};

void on_failure(int rank, void *) {
  if (rank != victim_rank.load()) return;
  failed_at_us.store(now_us());
  failed_rank.store(rank);
  failures_seen.fetch_add(1);
}

void fence_and_say(pmi::client &c, const char *word) {
  const long long before = now_us();
  try {
    c.fence();
    say("%s %d ok %lld us", word, c.rank(), now_us() - before);
  } catch (const pmi::error &e) {
    say("%s %d error %lld us: %s", word, c.rank(), now_us() - before, e.what());
  }
}

int recover(pmi::client &c, const std::vector<std::string_view> &args) {
  const auto number = [&](std::size_t i) { return std::atoi(std::string(args.at(i)).c_str()); };
  const int victim = number(1);
  bool fence = false, early_fence = false;
  int delay_ms = 0;
  int quit_code = -1;  // >= 0: the victim exits with it, without finalizing
  int exit_rank = -1, exit_code = 0;
  for (std::size_t i = 2; i < args.size(); ++i) {
    if (args[i] == "fence") fence = true;
    if (args[i] == "early-fence") early_fence = true;
    if (args[i] == "quit" && i + 1 < args.size()) quit_code = number(++i);
    if (args[i] == "after" && i + 1 < args.size()) delay_ms = number(++i);
    if (args[i] == "exit" && i + 2 < args.size()) {
      exit_rank = number(i + 1);
      exit_code = number(i + 2);
      i += 2;
    }
  }
  victim_rank.store(victim);
  const char *recovery = std::getenv("IRIS_RECOVERY");
  say("recovery %d %s watching %d", c.rank(), recovery ? recovery : "(unset)",
      c.watch_failures(&on_failure, nullptr) ? 1 : 0);
  create_shm_object(c);  // mpiexec must remove it after a recovered job too
  announce(c);
  const long long start = now_us();
  if (c.rank() == victim) {
    if (delay_ms > 0) ::usleep(static_cast<useconds_t>(delay_ms) * 1000);
    say("killing %d %lld", c.rank(), now_us());
    if (quit_code >= 0) std::_Exit(quit_code);
    ::raise(SIGKILL);
  }
  if (early_fence) fence_and_say(c, "early-fence");
  while (failed_rank.load() < 0 && now_us() - start < 5000000) ::usleep(1000);
  if (failed_rank.load() >= 0) {
    say("failed %d %d %lld", c.rank(), failed_rank.load(), failed_at_us.load());
  } else {
    say("nofailure %d", c.rank());
  }
  if (fence) fence_and_say(c, "fence");
  while (now_us() - start < 1000000) ::usleep(10000);
  say("done %d seen %d", c.rank(), failures_seen.load());
  c.finalize();
  say("finalized %d", c.rank());
  return c.rank() == exit_rank ? exit_code : 0;
}

int run(pmi::client &c, const std::vector<std::string_view> &args) {
  const std::string_view mode = args.at(0);
  const auto number = [&](std::size_t i) { return std::atoi(std::string(args.at(i)).c_str()); };
  if (mode == "card" || mode == "info") {
    print_info(c);
    const int status = mode == "card" ? exchange_cards(c) : 0;
    c.finalize();
    return status;
  }
  if (mode == "recover") return recover(c, args);
  if (mode == "env") {
    for (std::size_t i = 1; i < args.size(); ++i) {
      const char *value = std::getenv(std::string(args[i]).c_str());
      say("env %d %s %s", c.rank(), std::string(args[i]).c_str(), value ? value : "(unset)");
    }
  } else if (mode == "cwd") {
    char here[4096] = "?";
    if (::getcwd(here, sizeof here) == nullptr) std::strcpy(here, "?");
    const char *pwd = std::getenv("PWD");
    say("cwd %d %s %s", c.rank(), here, pwd != nullptr ? pwd : "(unset)");
  } else if (mode == "affinity") {
    say("affinity %d %s", c.rank(), affinity_list().c_str());
  } else if (mode == "stdin") {
    print_stdin(c.rank());
  } else if (mode == "shm") {
    create_shm_object(c);
    c.fence();
  } else {
    announce(c);
    const bool me = args.size() > 1 && c.rank() == number(1);
    if (mode == "hang") wait_to_be_killed(c);
    if (mode == "stubborn") {
      ::signal(SIGINT, SIG_IGN);
      ::signal(SIGTERM, SIG_IGN);
      wait_to_be_killed(c);
    }
    if (mode == "shm-kill" || mode == "shm-hang") {
      create_shm_object(c);
      c.fence();
      if (me) ::raise(SIGKILL);
    }
    if (me && mode == "exit") std::exit(number(2));
    if (me && mode == "exit0") std::exit(0);
    if (me && mode == "abort")
      c.abort(number(2), "test abort from rank " + std::to_string(c.rank()));
    if (me && mode == "segv") segfault();
    wait_to_be_killed(c);
  }
  c.finalize();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  ::alarm(life_limit_s);
  if (argc < 2) {
    std::fprintf(stderr, "usage: rank_program MODE [ARGS...] (modes: see rank_program.cpp)\n");
    return 2;
  }
  try {
    const std::unique_ptr<pmi::client> c = pmi::client_open();
    return run(*c, std::vector<std::string_view>(argv + 1, argv + argc));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rank_program: %s\n", e.what());
    return 1;
  }
}
