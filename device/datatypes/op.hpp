// Reduction operations: the predefined ones (typed kernels) and the user's
// (MPI_Op_create). Handles are of kind op (base/handle.hpp): indices 0..14 are MPI_OP_NULL
// and the predefined ops of mpi.h, user ops follow.
//
// Order: every op computes inout[i] = in[i] o inout[i], where `in` holds the
// contributions of lower ranks, so that a non-commutative op combines in rank
// order. MPI_REPLACE is x o y = y and MPI_NO_OP is x o y = x (the accumulate
// meanings); both count as non-commutative, so a reduction with them yields
// the last or the first rank's value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "include/mpi.h"

namespace iris::device {

// True when `handle` names a predefined op or a live user op (not MPI_OP_NULL).
bool op_valid(int handle);
bool op_commutative(int handle);
// The MPI name of a predefined op ("MPI_SUM"), or "user op".
const char *op_name(int handle);

// nullptr when `op` may reduce `datatype` (both valid), else why not. A
// user op may reduce any type; a predefined op only predefined types.
const char *op_type_mismatch(int op, int datatype);

// inout[i] = in[i] o inout[i] for `count` elements of `datatype`, whose
// extent is `extent` (passed in: the handle may be freed by now). The op and
// type must have passed op_type_mismatch: a derived type only with a user
// op, which gets both operands in the type's own layout (element i at
// i * extent). A large-count temporary type (dtype::wide_of) counts as its
// elements of the type it was made of, for the op and the user function.
// This is the one element loop of the reductions. A user op freed while an
// operation holds it (op_hold) still applies.
void op_apply(int op, const void *in, void *inout, std::size_t count, int datatype,
              std::int64_t extent);

// MPI_Op_create / MPI_Op_create_c / MPI_Op_free. op_free returns false for a
// handle that is not a live user op. A large-count function (MPI_Count
// length) gets every element in one call; an int one in pieces of at most
// INT_MAX elements. MPI lets a program free an op that a pending nonblocking
// or persistent collective uses: op_hold keeps a user op's function for such
// an operation until its op_unhold, and the handle is reused only then.
int op_create(MPI_User_function *function, bool commutative);
int op_create_c(MPI_User_function_c *function, bool commutative);
bool op_free(int handle);
void op_hold(int handle);
void op_unhold(int handle);

}  // namespace iris::device
