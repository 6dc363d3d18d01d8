// The process-management contract: who am I, who are my peers, where do I
// reach them.
//
// Lifecycle, as the device uses it:
//   client_open()            find the launcher (PMIx, or none: singleton)
//   rank()/size()/node_of()  the job's shape, fixed for its lifetime
//   put() ... commit()       publish this rank's business cards
//   fence()                  collective over the whole job; after it, get()
//                            sees every rank's committed cards
//   get(rank, key)           read a peer's card
//   finalize()               leave the job (abort() instead on fatal errors)
//
// Only the thread that called client_open() may call the methods.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace iris::pmi {

// Setup-time failure: the launcher is unreachable, a key is missing, a fence
// failed. The message is one line saying what and why.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Business cards fit what every PMI-1 launcher keeps, so that the same
// card travels over PMIx and PMI-1 alike. Hydra keeps keys of 63 and values
// of 1023 characters; Slurm's `srun --mpi=pmi2` takes one read of 1024
// bytes as a whole request line, `cmd=put kvsname=K key=KEY-RANK value=V`
// (a longer line is answered rc=0 and its card is lost). A 48-character key
// leaves room for the rank suffix PMI-1 adds, and a 768-character value for
// a kvsname of up to 150 characters (pmi1_client refuses a line that does
// not fit).
inline constexpr std::size_t max_value_length = 768;
inline constexpr std::size_t max_key_length = 48;

class client {
 public:
  virtual ~client() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Node index of `rank`: ranks with the same node index share memory.
  // Nodes are numbered 0.. in order of their lowest rank.
  virtual int node_of(int rank) const = 0;
  // How many ranks of the job run on this host as the launcher counts them
  // (PMIX_LOCAL_SIZE): more than node_of's when nodes are simulated on one
  // host. -1 when the launcher does not say.
  virtual int host_ranks() const { return -1; }
  // A name unique to this job on this host (the PMIx namespace), usable in
  // file names after shm_name_prefix().
  virtual std::string_view job_id() const = 0;
  // How many times MPI started in this process before the start this client
  // serves (client_restarted); 0 for the first.
  virtual int epoch() const { return 0; }
  // The launcher's name for the backend ("pmix", "singleton").
  virtual std::string_view backend() const = 0;
  virtual bool singleton() const = 0;

  virtual void put(std::string_view key, std::string_view value) = 0;
  virtual void commit() = 0;
  virtual void fence() = 0;
  virtual std::string get(int rank, std::string_view key) = 0;

  // Ends the whole job: the launcher kills every rank and exits with `code`.
  [[noreturn]] virtual void abort(int code, std::string_view message) = 0;
  virtual void finalize() = 0;

  // Recovery: calls fn(rank, arg) once for each rank of this job that the
  // launcher saw end without finalizing (killed, or exited without PMIx_Finalize),
  // on the launcher client's own thread: fn only stores (atomics), never blocks.
  // False when this backend cannot tell (singleton, PMI-1): the device then
  // relies on its transports alone.
  // A later call replaces fn and arg (once it returns the earlier fn is not
  // called again) and calls the new fn at once, on the calling thread, for
  // the ranks already reported; fn == nullptr stops the calls. Iris's
  // mpiexec reports deaths only under --enable-recovery (pmi/README.md).
  // Throws pmi::error when the launcher refuses the registration.
  virtual bool watch_failures(void (*fn)(int rank, void *arg), void *arg) {
    (void)fn;
    (void)arg;
    return false;
  }
};

// Picks the backend from the environment: PMIx when a PMIx server started
// us, otherwise a singleton of size 1. Throws pmi::error.
std::unique_ptr<client> client_open();

// MPI started again in one process (MPI-4 sessions: the last session ended
// MPI, and a new one begins). The launcher's connection cannot be opened
// twice, so `base`, the client of the first start, is kept; this wraps it
// for start number `epoch` (1, 2, ...): its keys are its own, so that no
// card of an earlier start is read back, and its finalize() does nothing
// (the owner of `base` finalizes that at the process's end).
std::unique_ptr<client> client_restarted(client &base, int epoch);

// Every shared-memory object a job creates in /dev/shm has a name starting
// with this prefix (without the leading '/'), so that the launcher can remove
// what a crashed rank left behind. `job_id` characters outside [A-Za-z0-9]
// become '_'.
std::string shm_name_prefix(std::string_view job_id);
// The same for the objects of one start of MPI (client::epoch): the job's
// prefix, then "e<epoch>-" after the first start.
std::string shm_name_prefix(const client &c);

}  // namespace iris::pmi
