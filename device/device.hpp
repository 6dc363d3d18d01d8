// What the C bindings (device/api/) call: the runtime and each phase's
// operations. Protocol files include only the headers they need.
#pragma once

#include "device/cancel.hpp"
#include "device/collective.hpp"
#include "device/comm.hpp"
#include "device/credit.hpp"
#include "device/progress.hpp"
#include "device/recv.hpp"
#include "device/request.hpp"
#include "device/runtime.hpp"
#include "device/send.hpp"
#include "device/threading.hpp"
#include "device/typed.hpp"
