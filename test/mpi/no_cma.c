/* Preloaded by the job tests to stand for a kernel that refuses
 * cross-memory attach (containers, Yama ptrace policy): every
 * process_vm_readv fails with EPERM. With IRIS_TEST_CMA_REFUSE_ABOVE=n
 * only reads of more than n bytes fail: the 8-byte probes pass, and a
 * kernel that turns against CMA after them is stood for. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long local_count,
                         const struct iovec *remote, unsigned long remote_count,
                         unsigned long flags) {
  const char *above = getenv("IRIS_TEST_CMA_REFUSE_ABOVE");
  if (above != NULL) {
    size_t bytes = 0;
    for (unsigned long i = 0; i < local_count; ++i) bytes += local[i].iov_len;
    if (bytes <= (size_t)strtoull(above, NULL, 10)) {
      return syscall(SYS_process_vm_readv, pid, local, local_count, remote, remote_count, flags);
    }
  }
  errno = EPERM;
  return -1;
}
