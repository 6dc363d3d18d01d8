// Recovery's watch of the processes of this node (protocols/recovery.hpp):
// a thread waits on a pidfd for each peer on the node's shared memory and
// reports a peer whose process ended before it finished MPI (its bell's
// `finished` unset) as dead at once. Launchers that tell nobody of a death
// (Hydra, srun) then lose nothing over shared memory, where no socket closes;
// under mpiexec it is a second witness, usually the first.
//
// A peer is watched only when its identity is proved: its pid comes from
// its CMA card and the card's probe word is read from that pid after the
// pidfd is open (a peer in another pid namespace, or a kernel that refuses
// CMA or pidfds, is left to the launcher). Private to device/transports/.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace iris::device {

class liveness_watch {
 public:
  struct peer {
    int world_rank = 0;
    std::string card;                                      // its CMA card (shm/cma.hpp)
    const std::atomic<std::uint32_t> *finished = nullptr;  // its bell's
  };
  liveness_watch() = default;
  liveness_watch(const liveness_watch &) = delete;
  liveness_watch &operator=(const liveness_watch &) = delete;
  ~liveness_watch() { stop(); }

  // Starts the thread over `peers` (those it cannot prove are left out; a
  // peer already gone unfinished is reported at once). Returns how many it
  // watches.
  int start(const std::vector<peer> &peers);
  // Stops and joins the thread; no report comes from it after.
  void stop();

 private:
  void run();

  struct watched {
    int world_rank;
    const std::atomic<std::uint32_t> *finished;
  };
  std::vector<int> fds_;  // [0] the stop eventfd, then a pidfd per watched peer
  std::vector<watched> peers_;
  std::thread thread_;
};

}  // namespace iris::device
