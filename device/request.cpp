#include "device/request.hpp"

#include "device/dtype.hpp"
#include "device/progress.hpp"
#include "device/runtime.hpp"

namespace iris::device {

void request_complete(request &r) {
  if (r.cancel_pending) return;  // cancel_on_reply completes it
  r.complete = true;
  if (!r.freed) return;
  // Freed by the user: nobody will wait for it, so finish its work here.
  if (r.unpack_pending) {
    r.unpack_pending = false;
    dtype_unpack_range(r.scratch, 0, r.status_bytes, r.unpack_to, r.unpack_count, *r.unpack_type);
  }
  rt->requests.release(&r);
}

void request_wait_release(request *r) {
  if (r == nullptr) return;
  progress_until([r] { return r->complete; });
  rt->requests.release(r);
}

}  // namespace iris::device
