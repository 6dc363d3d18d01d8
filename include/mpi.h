/* Iris: the MPI C interface.
 *
 * Handles are ints. The top four bits name the kind of object, so that a
 * handle of the wrong kind is caught and reported instead of misused:
 *   1 communicator, 2 group, 3 datatype, 4 op, 5 error handler, 6 message,
 *   7 request, 8 attribute keyval, 9 info, 10 window, 11 file, 12 session.
 * A predefined datatype also carries its extent in bits 8..23.
 *
 * The declarations live in parts under iris/ (installed beside this file),
 * one per family; programs include this file only. iris/pmpi.h, the
 * profiling interface (PMPI_X for every MPI_X), is generated from the others
 * when Iris is configured (include/pmpi.py).
 */
#ifndef IRIS_MPI_H_INCLUDED
#define IRIS_MPI_H_INCLUDED

#include "iris/am.h"
#include "iris/coll.h"
#include "iris/comm.h"
#include "iris/datatype.h"
#include "iris/env.h"
#include "iris/ft.h"
#include "iris/handles.h"
#include "iris/large_count.h"
#include "iris/p2p.h"
#include "iris/rma.h"
#include "iris/topology.h"
#include "iris/types.h"
#include "iris/unsupported.h"
/* Generated from the parts above: last. */
#include "iris/pmpi.h"

#endif /* IRIS_MPI_H_INCLUDED */
