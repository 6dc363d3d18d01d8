// What the C bindings (device/api/) call: the runtime and each phase's
// operations. Protocol files include only the headers they need.
#pragma once

#include "device/base/threading.hpp"
#include "device/collectives/collective.hpp"
#include "device/core/comm.hpp"
#include "device/core/request.hpp"
#include "device/protocols/cancel.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/protocols/typed.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"
