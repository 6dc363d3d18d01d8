/* Preloaded by the job tests to stand for a kernel that refuses
 * cross-memory attach (containers, Yama ptrace policy): every
 * process_vm_readv and process_vm_writev fails with EPERM (the kernel
 * allows both or neither). With IRIS_TEST_CMA_REFUSE_ABOVE=n only those of
 * more than n bytes fail: the 8-byte probes pass, and a kernel that turns
 * against CMA after them is stood for. With IRIS_TEST_CMA_REFUSE_WRITES
 * set, reads pass and every write fails: the error paths of a rank whose
 * writes into another's memory fail while that one's reads succeed. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int refused(const struct iovec *local, unsigned long local_count, int writes) {
  if (getenv("IRIS_TEST_CMA_REFUSE_WRITES") != NULL) {
    if (!writes) return 0;
    errno = EPERM;
    return 1;
  }
  const char *above = getenv("IRIS_TEST_CMA_REFUSE_ABOVE");
  if (above != NULL) {
    size_t bytes = 0;
    for (unsigned long i = 0; i < local_count; ++i) bytes += local[i].iov_len;
    if (bytes <= (size_t)strtoull(above, NULL, 10)) return 0;
  }
  errno = EPERM;
  return 1;
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long local_count,
                         const struct iovec *remote, unsigned long remote_count,
                         unsigned long flags) {
  if (refused(local, local_count, 0)) return -1;
  return syscall(SYS_process_vm_readv, pid, local, local_count, remote, remote_count, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long local_count,
                          const struct iovec *remote, unsigned long remote_count,
                          unsigned long flags) {
  if (refused(local, local_count, 1)) return -1;
  return syscall(SYS_process_vm_writev, pid, local, local_count, remote, remote_count, flags);
}
