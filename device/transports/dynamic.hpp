// Processes of other jobs (MPI's dynamic processes: MPI_Comm_connect,
// MPI_Comm_accept, MPI_Comm_join): each gets a VC after the world's, reached
// through the net transport. A process of this job is its world VC. Both
// ways of meeting one end at peer_of: a group's table read from a port
// (with its card), and a connection it opened to this rank (without).
// Under MPI_THREAD_MULTIPLE too: what aside passes walk grows without
// moving (README.md, "Processes of other jobs").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace iris::device {

class net_transport;

// This process's job, as a hash of its id (what a port name and the netmod's
// hello carry).
std::uint64_t job_hash_here();

// The net transport, opened now when this process had none (a job on one
// node). nullptr, with `why`, when there is none to have: MPI_THREAD_MULTIPLE,
// IRIS_DYNAMIC_PEERS=0, the progress thread running, or the netmod failing.
net_transport *net_for_others(std::string &why);

// The VC of rank `rank` of the job whose hash is `job`: the world's for this
// job, else the one made before (given `card` now if it had none), else a
// new one reached at `card` (may be empty). -1, with `why`, when none can be.
int peer_of(std::uint64_t job, int rank, std::string_view card, std::string &why);

// The same process named so that every process can read it (a VC index is
// this process's own): its job's hash and its rank there. For calls that
// send groups between processes (MPI_Intercomm_create).
void process_id(int vc, std::uint64_t &job, int &rank);
// The VC of a process named so, or -1 when this process does not know it
// (it has no card to reach it with).
int known_peer(std::uint64_t job, int rank);

// One line on stderr ("iris: rank R: dynamic processes: what").
void log_note(const std::string &what);

}  // namespace iris::device
