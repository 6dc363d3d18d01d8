// The netmod contract for netmods built outside Iris, installed as
// <includedir>/iris/netmod.h with the headers it names beside it
// (<includedir>/iris/netmods/, pmi/, device/base/). Compile a module with
// -I<includedir> -I<includedir>/iris (Iris's mpicxx adds the first), link
// it as a shared library called
// libiris-netmod-<name>.so, and put it where IRIS_NETMOD_PATH or
// <libdir>/iris finds it; netmods/example/relay.cpp is one.
//
// netmods/netmod.hpp holds the contract (what a netmod does and when the
// device calls it) and contract_version, which a module must state;
// pmi/pmi.hpp the process manager's client that init() is given, through
// which a netmod puts and reads business cards.
#pragma once

#include "netmods/netmod.hpp"
#include "pmi/pmi.hpp"
