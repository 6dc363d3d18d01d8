#include "device/request.hpp"

#include "device/dtype.hpp"
#include "device/progress.hpp"
#include "device/runtime.hpp"

namespace iris::device {

void request_complete(request &r) {
  if (r.cancel_pending) return;  // cancel_on_reply completes it
  r.complete = true;
  if (!r.freed) return;
  // Freed by the user: nobody will wait for it (its data is in place).
  rt->requests.release(&r);
}

void request_wait_release(request *r) {
  if (r == nullptr) return;
  progress_until([r] { return r->complete; });
  rt->requests.release(r);
}

}  // namespace iris::device
