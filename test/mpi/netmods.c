/* One job whose peers are reached through different netmods: each rank
 * sets its own IRIS_NETMOD before MPI_Init, so that some pairs share only
 * one netmod and others prefer different ones.
 *
 *   netmods LISTS [UNREACHED]
 *     LISTS: the ranks' IRIS_NETMOD values, ';'-separated; rank i takes
 *     entry i % count (its rank is read from the launcher's PMIX_RANK or
 *     PMI_RANK). An entry may add settings of that rank:
 *     "ofi,tcp|IRIS_TCP_IF=x".
 *     UNREACHED: pairs a netmod does not reach here, ';'-separated
 *     "A-B:netmod" (ranks A < B): the rule skips it for that pair.
 *     LISTS "auto" (IRIS_NETMOD=auto): every remote peer goes by tcp or
 *     ofi; on two nodes, all by one, the same at every rank, and rank 0
 *     prints "netmods: auto chose ofi" (or tcp).
 *
 * Checks:
 * - each rank's peers on other nodes went by the netmod the rule picks
 *   (the first of the lower rank's list that the other offers and that
 *   reaches the pair), counted by MPIX_Stat_get("net_peers_<netmod>");
 *   peers on this node go by shm unless IRIS_SHM=0;
 * - every byte and the order of 3 messages a pair at each of 8 B, 3000 B,
 *   70,000 B and 2 MiB (eager to rendezvous), all sent at once;
 * - puts and gets of 16 KiB to every rank through a window with fence;
 *   over ofi they go by its RMA (window_rma counts them), over tcp none do.
 *
 * Rank 0 prints "netmods: all checks passed on N ranks". */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { most_lists = 16, name_length = 64, messages = 3, sizes = 4, block = 16 * 1024 };
static const int size_of[sizes] = {8, 3000, 70000, 2 << 20};

static char lists[most_lists][name_length];
static int list_count = 0;
static const char *unreached = "";

static int launcher_rank(void) {
  const char *names[] = {"PMIX_RANK", "PMI_RANK"};
  for (int i = 0; i < 2; ++i) {
    const char *v = getenv(names[i]);
    if (v != NULL) return atoi(v);
  }
  return -1;
}

/* Whether the comma-separated `list` names `netmod`. */
static int offers(const char *list, const char *netmod, size_t length) {
  for (const char *p = list; *p != '\0';) {
    const char *comma = strchr(p, ',');
    const size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (n == length && strncmp(p, netmod, n) == 0) return 1;
    if (comma == NULL) break;
    p = comma + 1;
  }
  return 0;
}

/* Whether UNREACHED says `netmod` does not reach the pair (low, high). */
static int unreachable(int low, int high, const char *netmod, size_t length) {
  char entry[name_length];
  const int n = snprintf(entry, sizeof entry, "%d-%d:%.*s", low, high, (int)length, netmod);
  for (const char *p = strstr(unreached, entry); p != NULL; p = strstr(p + 1, entry)) {
    const int starts = p == unreached || p[-1] == ';';
    const int ends = p[n] == '\0' || p[n] == ';';
    if (starts && ends) return 1;
  }
  return 0;
}

/* The netmod of the pair (a, b): the first of the lower rank's list the
 * other offers and that reaches the pair. Copies its name into `out`. */
static void pair_netmod(int a, int b, char *out) {
  const int low = a < b ? a : b;
  const int high = a < b ? b : a;
  const char *first = lists[low % list_count];
  const char *second = lists[high % list_count];
  out[0] = '\0';
  for (const char *p = first; *p != '\0';) {
    const char *comma = strchr(p, ',');
    const size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (offers(second, p, n) && !unreachable(low, high, p, n)) {
      memcpy(out, p, n);
      out[n] = '\0';
      return;
    }
    if (comma == NULL) break;
    p = comma + 1;
  }
}

static unsigned char pattern(int from, int to, int m, int s, size_t i) {
  return (unsigned char)(from * 31 + to * 17 + m * 7 + s * 3 + i + (i >> 9));
}

static void exchange(int rank, int size) {
  const int per_peer = messages * sizes;
  MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)(2 * size * per_peer));
  unsigned char **out = calloc((size_t)(size * per_peer), sizeof(unsigned char *));
  unsigned char **in = calloc((size_t)(size * per_peer), sizeof(unsigned char *));
  int n = 0;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    for (int s = 0; s < sizes; ++s) {
      for (int m = 0; m < messages; ++m) {
        const int k = peer * per_peer + s * messages + m;
        in[k] = malloc((size_t)size_of[s]);
        MPI_Irecv(in[k], size_of[s], MPI_BYTE, peer, s, MPI_COMM_WORLD, &requests[n++]);
      }
    }
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    for (int s = 0; s < sizes; ++s) {
      for (int m = 0; m < messages; ++m) {
        const int k = peer * per_peer + s * messages + m;
        out[k] = malloc((size_t)size_of[s]);
        for (size_t i = 0; i < (size_t)size_of[s]; ++i) out[k][i] = pattern(rank, peer, m, s, i);
        MPI_Isend(out[k], size_of[s], MPI_BYTE, peer, s, MPI_COMM_WORLD, &requests[n++]);
      }
    }
  }
  MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    for (int s = 0; s < sizes; ++s) {
      for (int m = 0; m < messages; ++m) {
        const int k = peer * per_peer + s * messages + m;
        size_t wrong = 0;
        for (size_t i = 0; i < (size_t)size_of[s]; ++i) {
          if (in[k][i] != pattern(peer, rank, m, s, i)) ++wrong;
        }
        /* The m-th receive of a (peer, tag) holds the m-th message sent. */
        CHECK(wrong == 0, "message %d of %d B from rank %d: %zu wrong bytes", m, size_of[s], peer,
              wrong);
        free(in[k]);
        free(out[k]);
      }
    }
  }
  free(in);
  free(out);
  free(requests);
}

/* Each rank puts a block into its slot of every other rank's window, then
 * gets every other rank's own slot back. */
static void window(int rank, int size) {
  unsigned char *base = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)size * block, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (size_t i = 0; i < block; ++i) base[(size_t)rank * block + i] = pattern(rank, rank, 9, 0, i);
  unsigned char *mine = malloc(block);
  unsigned char *got = malloc((size_t)size * block);
  for (size_t i = 0; i < block; ++i) mine[i] = pattern(rank, size, 8, 0, i);
  MPI_Win_fence(0, win);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) {
      MPI_Put(mine, block, MPI_BYTE, peer, (MPI_Aint)rank * block, block, MPI_BYTE, win);
    }
  }
  MPI_Win_fence(0, win);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) {
      MPI_Get(got + (size_t)peer * block, block, MPI_BYTE, peer, (MPI_Aint)peer * block, block,
              MPI_BYTE, win);
    }
  }
  MPI_Win_fence(0, win);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    size_t put_wrong = 0;
    size_t get_wrong = 0;
    for (size_t i = 0; i < block; ++i) {
      if (base[(size_t)peer * block + i] != pattern(peer, size, 8, 0, i)) ++put_wrong;
      if (got[(size_t)peer * block + i] != pattern(peer, peer, 9, 0, i)) ++get_wrong;
    }
    CHECK(put_wrong == 0, "rank %d's put: %zu wrong bytes", peer, put_wrong);
    CHECK(get_wrong == 0, "get from rank %d: %zu wrong bytes", peer, get_wrong);
  }
  MPI_Win_free(&win);
  free(mine);
  free(got);
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr,
            "usage: netmods LISTS [UNREACHED] (IRIS_NETMOD of each rank, ';'-separated; "
            "pairs a netmod does not reach, as A-B:netmod)\n");
    return 2;
  }
  if (argc == 3) unreached = argv[2];
  for (char *entry = strtok(argv[1], ";"); entry != NULL && list_count < most_lists;
       entry = strtok(NULL, ";")) {
    snprintf(lists[list_count++], name_length, "%s", entry);
  }
  const int launched = launcher_rank();
  if (list_count == 0 || launched < 0) {
    fprintf(stderr, "netmods: no lists, or no PMIX_RANK or PMI_RANK to choose one by\n");
    return 2;
  }
  /* This rank's settings after its list, then the list alone. */
  char *mine = lists[launched % list_count];
  for (char *bar = strchr(mine, '|'); bar != NULL;) {
    *bar = '\0';
    char *setting = bar + 1;
    bar = strchr(setting, '|');
    if (bar != NULL) *bar = '\0';
    char *equals = strchr(setting, '=');
    if (equals == NULL) {
      fprintf(stderr, "netmods: the setting '%s' has no '='\n", setting);
      return 2;
    }
    *equals = '\0';
    setenv(setting, equals + 1, 1);
    if (bar != NULL) *bar = '|';
  }
  for (int i = 0; i < list_count; ++i) {
    char *bar = strchr(lists[i], '|');
    if (bar != NULL) *bar = '\0';
  }
  setenv("IRIS_NETMOD", mine, 1);
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(rank == launched, "MPI rank %d, launcher rank %d", rank, launched);

  /* Which peers share this rank's node (and so go by shm). */
  const char *shm = getenv("IRIS_SHM");
  const int shm_on = shm == NULL || strcmp(shm, "0") != 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Group world_group, node_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(node, &node_group);
  int expect_ofi = 0;
  int expect_tcp = 0;
  int remote = 0;
  const int probing = strcmp(mine, "auto") == 0;
  for (int peer = 0; peer < size; ++peer) {
    int on_node = MPI_UNDEFINED;
    MPI_Group_translate_ranks(world_group, 1, &peer, node_group, &on_node);
    if (peer == rank || (shm_on && on_node != MPI_UNDEFINED)) continue;
    ++remote;
    if (probing) continue;
    char chosen[name_length];
    pair_netmod(rank, peer, chosen);
    CHECK(chosen[0] != '\0', "ranks %d and %d share no netmod in this test's lists", rank, peer);
    if (strcmp(chosen, "ofi") == 0) ++expect_ofi;
    if (strcmp(chosen, "tcp") == 0) ++expect_tcp;
  }
  MPI_Count ofi = -1;
  MPI_Count tcp = -1;
  CHECK(MPIX_Stat_get("net_peers_ofi", &ofi) == MPI_SUCCESS, "no net_peers_ofi");
  CHECK(MPIX_Stat_get("net_peers_tcp", &tcp) == MPI_SUCCESS, "no net_peers_tcp");
  if (probing) {
    /* Every remote peer goes by one of the two. On two nodes the probe of
     * their pair chose one netmod, the same at every rank: all remote peers
     * go by it. (With more nodes each pair of nodes has its own.) */
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    int first_of_node = node_rank == 0;
    int nodes = 0;
    MPI_Allreduce(&first_of_node, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ofi_chosen = ofi > 0;
    int least = 0;
    int most = 0;
    MPI_Allreduce(&ofi_chosen, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ofi_chosen, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(ofi + tcp == remote, "IRIS_NETMOD=auto: peers through ofi %lld, tcp %lld, of %d",
          (long long)ofi, (long long)tcp, remote);
    CHECK(nodes != 2 || ((ofi == 0 || tcp == 0) && least == most),
          "IRIS_NETMOD=auto on two nodes: peers through ofi %lld, tcp %lld; ranks chose ofi: %d "
          "to %d",
          (long long)ofi, (long long)tcp, least, most);
    expect_ofi = (int)ofi;
    if (rank == 0 && nodes == 2) printf("netmods: auto chose %s\n", ofi > 0 ? "ofi" : "tcp");
  } else {
    CHECK(ofi == expect_ofi && tcp == expect_tcp,
          "IRIS_NETMOD=%s: peers through ofi %lld, tcp %lld; the rule gives %d and %d",
          lists[rank % list_count], (long long)ofi, (long long)tcp, expect_ofi, expect_tcp);
  }

  exchange(rank, size);

  MPI_Count before = 0;
  MPI_Count after = 0;
  MPIX_Stat_get("window_rma", &before);
  window(rank, size);
  MPIX_Stat_get("window_rma", &after);
  /* A put and a get to each peer through ofi; none through tcp or shm. */
  CHECK(after - before == 2 * expect_ofi, "window ops by RMA: %lld, expected %d",
        (long long)(after - before), 2 * expect_ofi);

  MPI_Group_free(&node_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&node);
  int failures = check_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failures == 0) printf("netmods: all checks passed on %d ranks\n", size);
  return finish();
}
