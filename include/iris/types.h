/* Iris mpi.h, part: handles, constants, the status, error classes. Programs include <mpi.h>, which
 * includes every part; each part compiles on its own. */
#ifndef IRIS_MPI_TYPES_H_INCLUDED
#define IRIS_MPI_TYPES_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPI_VERSION 4
#define MPI_SUBVERSION 0
#define IRIS_VERSION_STRING "0.1.0"

typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Errhandler;
typedef int MPI_Request;
typedef int MPI_Message;
typedef ptrdiff_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Info;
typedef int MPI_Win;
typedef int MPI_File;
typedef int MPI_Session;
typedef void MPI_Comm_errhandler_function(MPI_Comm *, int *, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn; /* the MPI-2 name */
typedef void MPI_Win_errhandler_function(MPI_Win *, int *, ...);
typedef void MPI_File_errhandler_function(MPI_File *, int *, ...);
typedef void MPI_Session_errhandler_function(MPI_Session *, int *, ...);
/* The deprecated MPI-2 names of the window and file handler types. */
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;

typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int iris_cancelled;
  MPI_Count iris_bytes; /* bytes received */
} MPI_Status;

#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

/* Handles: kind << 27 | index, kind 1-15 and index below 2^27, so that every
 * handle, predefined or made by a call, is a positive int (as MPICH's are:
 * bindings that hold handles as integers would sign-extend a negative one).
 * Kinds: 1 communicator, 2 group, 3 datatype, 4 op, 5 error handler,
 * 6 message, 7 request, 8 keyval, 9 info, 10 window, 11 file, 12 session. */
#define IRIS_HANDLE(kind, index) ((int)(((unsigned)(kind) << 27) | (unsigned)(index)))

/* Communicators */
#define MPI_COMM_NULL ((MPI_Comm)IRIS_HANDLE(1, 0))
#define MPI_COMM_WORLD ((MPI_Comm)IRIS_HANDLE(1, 1))
#define MPI_COMM_SELF ((MPI_Comm)IRIS_HANDLE(1, 2))

/* MPI_Comm_split_type: SHARED gives the ranks of one node (they share
 * memory); HW_GUIDED and RESOURCE_GUIDED the same when the info key
 * "mpi_hw_resource_type" is "mpi_shared_memory", and MPI_COMM_NULL for any
 * other resource; HW_UNGUIDED the node when it is a strict subset of the
 * communicator, else MPI_COMM_NULL. */
#define MPI_COMM_TYPE_SHARED 1
#define MPI_COMM_TYPE_HW_UNGUIDED 2
#define MPI_COMM_TYPE_HW_GUIDED 3
#define MPI_COMM_TYPE_RESOURCE_GUIDED 4

/* Attribute keyvals: kind 8. The predefined attributes are
 * answered by MPI_Comm_get_attr on every communicator (the value is a
 * pointer to an int) and cannot be set, deleted or freed. MPI_APPNUM is
 * present when the launcher started several programs (mpiexec's
 * `-n N a : -n M b`, MPI_Comm_spawn_multiple): the program's number. */
#define MPI_KEYVAL_INVALID ((int)IRIS_HANDLE(8, 0))
#define MPI_TAG_UB ((int)IRIS_HANDLE(8, 1))
#define MPI_HOST ((int)IRIS_HANDLE(8, 2))            /* MPI_PROC_NULL: no host process */
#define MPI_IO ((int)IRIS_HANDLE(8, 3))              /* MPI_ANY_SOURCE: every rank can do I/O */
#define MPI_WTIME_IS_GLOBAL ((int)IRIS_HANDLE(8, 4)) /* 0: clocks are not synchronized */
#define MPI_APPNUM ((int)IRIS_HANDLE(8, 5))          /* the program's number, when several */
#define MPI_UNIVERSE_SIZE ((int)IRIS_HANDLE(8, 6))   /* the world's size, or IRIS_UNIVERSE_SIZE */
#define MPI_LASTUSEDCODE ((int)IRIS_HANDLE(8, 7))    /* the largest error code in use */

/* Groups */
#define MPI_GROUP_NULL ((MPI_Group)IRIS_HANDLE(2, 0))
#define MPI_GROUP_EMPTY ((MPI_Group)IRIS_HANDLE(2, 1))

/* Results of MPI_Comm_compare and MPI_Group_compare */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

/* Requests and messages */
#define MPI_REQUEST_NULL ((MPI_Request)IRIS_HANDLE(7, 0))
/* The value of MPI_REQUEST_NULL, as in MPICH: code written for MPICH
 * compares a message handle with MPI_REQUEST_NULL. */
#define MPI_MESSAGE_NULL ((MPI_Message)IRIS_HANDLE(7, 0))
#define MPI_MESSAGE_NO_PROC ((MPI_Message)IRIS_HANDLE(6, 0x7ffffff))

/* Error handlers */
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)IRIS_HANDLE(5, 0))
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)IRIS_HANDLE(5, 1))
#define MPI_ERRORS_RETURN ((MPI_Errhandler)IRIS_HANDLE(5, 2))
#define MPI_ERRORS_ABORT ((MPI_Errhandler)IRIS_HANDLE(5, 3))

/* Info objects */
#define MPI_INFO_NULL ((MPI_Info)IRIS_HANDLE(9, 0))
#define MPI_INFO_ENV ((MPI_Info)IRIS_HANDLE(9, 1))
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024

/* Windows, files and sessions: not supported yet (see the prototypes below) */
#define MPI_WIN_NULL ((MPI_Win)IRIS_HANDLE(10, 0))
#define MPI_FILE_NULL ((MPI_File)IRIS_HANDLE(11, 0))
#define MPI_SESSION_NULL ((MPI_Session)IRIS_HANDLE(12, 0))
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED 235
#define MPI_MODE_CREATE 1
#define MPI_MODE_RDONLY 2
#define MPI_MODE_WRONLY 4
#define MPI_MODE_RDWR 8
#define MPI_MODE_DELETE_ON_CLOSE 16
#define MPI_MODE_UNIQUE_OPEN 32
#define MPI_MODE_EXCL 64
#define MPI_MODE_APPEND 128
#define MPI_MODE_SEQUENTIAL 256
#define MPI_MODE_NOCHECK 1024
#define MPI_MODE_NOSTORE 2048
#define MPI_MODE_NOPUT 4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384
#define MPI_SEEK_SET 600
#define MPI_SEEK_CUR 602
#define MPI_SEEK_END 604
#define MPI_DISPLACEMENT_CURRENT (-54278278) /* MPICH's value */
#define MPI_MAX_PORT_NAME 256
#define MPI_ARGV_NULL ((char **)0)
#define MPI_ARGVS_NULL ((char ***)0)
#define MPI_ERRCODES_IGNORE ((int *)0)

/* Topologies (MPI_Topo_test) */
#define MPI_GRAPH 1
#define MPI_CART 2
#define MPI_DIST_GRAPH 3

/* Predefined datatypes: kind 3, bit 26 set, extent << 8 | index */
#define IRIS_BUILTIN_TYPE(extent, index) \
  ((MPI_Datatype)(IRIS_HANDLE(3, 0x4000000) | ((extent) << 8) | (index)))
#define MPI_DATATYPE_NULL ((MPI_Datatype)IRIS_HANDLE(3, 0))
#define MPI_CHAR IRIS_BUILTIN_TYPE(1, 1)
#define MPI_SIGNED_CHAR IRIS_BUILTIN_TYPE(1, 2)
#define MPI_UNSIGNED_CHAR IRIS_BUILTIN_TYPE(1, 3)
#define MPI_BYTE IRIS_BUILTIN_TYPE(1, 4)
#define MPI_SHORT IRIS_BUILTIN_TYPE(2, 5)
#define MPI_UNSIGNED_SHORT IRIS_BUILTIN_TYPE(2, 6)
#define MPI_INT IRIS_BUILTIN_TYPE(4, 7)
#define MPI_UNSIGNED IRIS_BUILTIN_TYPE(4, 8)
#define MPI_LONG IRIS_BUILTIN_TYPE(8, 9)
#define MPI_UNSIGNED_LONG IRIS_BUILTIN_TYPE(8, 10)
#define MPI_LONG_LONG_INT IRIS_BUILTIN_TYPE(8, 11)
#define MPI_LONG_LONG MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG IRIS_BUILTIN_TYPE(8, 12)
#define MPI_FLOAT IRIS_BUILTIN_TYPE(4, 13)
#define MPI_DOUBLE IRIS_BUILTIN_TYPE(8, 14)
#define MPI_LONG_DOUBLE IRIS_BUILTIN_TYPE(16, 15)
#define MPI_WCHAR IRIS_BUILTIN_TYPE(4, 16)
#define MPI_C_BOOL IRIS_BUILTIN_TYPE(1, 17)
#define MPI_INT8_T IRIS_BUILTIN_TYPE(1, 18)
#define MPI_INT16_T IRIS_BUILTIN_TYPE(2, 19)
#define MPI_INT32_T IRIS_BUILTIN_TYPE(4, 20)
#define MPI_INT64_T IRIS_BUILTIN_TYPE(8, 21)
#define MPI_UINT8_T IRIS_BUILTIN_TYPE(1, 22)
#define MPI_UINT16_T IRIS_BUILTIN_TYPE(2, 23)
#define MPI_UINT32_T IRIS_BUILTIN_TYPE(4, 24)
#define MPI_UINT64_T IRIS_BUILTIN_TYPE(8, 25)
#define MPI_AINT IRIS_BUILTIN_TYPE(8, 26)
#define MPI_OFFSET IRIS_BUILTIN_TYPE(8, 27)
#define MPI_COUNT IRIS_BUILTIN_TYPE(8, 28)
#define MPI_PACKED IRIS_BUILTIN_TYPE(1, 29)
#define MPI_C_FLOAT_COMPLEX IRIS_BUILTIN_TYPE(8, 30)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX IRIS_BUILTIN_TYPE(16, 31)
#define MPI_C_LONG_DOUBLE_COMPLEX IRIS_BUILTIN_TYPE(32, 32)
/* Pair types for MINLOC/MAXLOC: the extent includes the C struct padding. */
#define MPI_FLOAT_INT IRIS_BUILTIN_TYPE(8, 33)
#define MPI_DOUBLE_INT IRIS_BUILTIN_TYPE(16, 34)
#define MPI_LONG_INT IRIS_BUILTIN_TYPE(16, 35)
#define MPI_2INT IRIS_BUILTIN_TYPE(8, 36)
#define MPI_SHORT_INT IRIS_BUILTIN_TYPE(8, 37)
#define MPI_LONG_DOUBLE_INT IRIS_BUILTIN_TYPE(32, 38)

/* Fortran and C++ datatypes (for codes that mix languages, and mpi4py):
 * distinct handles with the layouts of gfortran's default kinds and g++'s
 * types on x86-64. MPI_REAL16 and MPI_COMPLEX32 are x86's 80-bit long
 * double in 16 bytes (as gfortran's REAL(10)), not IEEE quad. */
#define MPI_CHARACTER IRIS_BUILTIN_TYPE(1, 39)
#define MPI_LOGICAL IRIS_BUILTIN_TYPE(4, 40)
#define MPI_INTEGER IRIS_BUILTIN_TYPE(4, 41)
#define MPI_REAL IRIS_BUILTIN_TYPE(4, 42)
#define MPI_DOUBLE_PRECISION IRIS_BUILTIN_TYPE(8, 43)
#define MPI_COMPLEX IRIS_BUILTIN_TYPE(8, 44)
#define MPI_DOUBLE_COMPLEX IRIS_BUILTIN_TYPE(16, 45)
#define MPI_INTEGER1 IRIS_BUILTIN_TYPE(1, 46)
#define MPI_INTEGER2 IRIS_BUILTIN_TYPE(2, 47)
#define MPI_INTEGER4 IRIS_BUILTIN_TYPE(4, 48)
#define MPI_INTEGER8 IRIS_BUILTIN_TYPE(8, 49)
#define MPI_REAL4 IRIS_BUILTIN_TYPE(4, 50)
#define MPI_REAL8 IRIS_BUILTIN_TYPE(8, 51)
#define MPI_REAL16 IRIS_BUILTIN_TYPE(16, 52)
#define MPI_COMPLEX8 IRIS_BUILTIN_TYPE(8, 53)
#define MPI_COMPLEX16 IRIS_BUILTIN_TYPE(16, 54)
#define MPI_COMPLEX32 IRIS_BUILTIN_TYPE(32, 55)
#define MPI_2INTEGER IRIS_BUILTIN_TYPE(8, 56)
#define MPI_2REAL IRIS_BUILTIN_TYPE(8, 57)
#define MPI_2DOUBLE_PRECISION IRIS_BUILTIN_TYPE(16, 58)
#define MPI_CXX_BOOL IRIS_BUILTIN_TYPE(1, 59)
#define MPI_CXX_FLOAT_COMPLEX IRIS_BUILTIN_TYPE(8, 60)
#define MPI_CXX_DOUBLE_COMPLEX IRIS_BUILTIN_TYPE(16, 61)
#define MPI_CXX_LONG_DOUBLE_COMPLEX IRIS_BUILTIN_TYPE(32, 62)
/* gfortran's INTEGER(16), a 16-byte two's-complement integer. */
#define MPI_INTEGER16 IRIS_BUILTIN_TYPE(16, 63)
/* MPI-1's bound markers, removed in MPI-3 and still in MPICH 4 and Open MPI
 * for old codes (include/README.md): size and extent 0; in a struct,
 * MPI_LB at d sets the lower bound to d and MPI_UB the upper bound, as
 * MPI_Type_create_resized does. */
#define MPI_LB IRIS_BUILTIN_TYPE(0, 64)
#define MPI_UB IRIS_BUILTIN_TYPE(0, 65)
/* gfortran's LOGICAL(1), (2), (4) and (8). It has no REAL(2) and so no
 * COMPLEX(4): those two are MPI_DATATYPE_NULL, as in MPICH without them. */
#define MPI_LOGICAL1 IRIS_BUILTIN_TYPE(1, 66)
#define MPI_LOGICAL2 IRIS_BUILTIN_TYPE(2, 67)
#define MPI_LOGICAL4 IRIS_BUILTIN_TYPE(4, 68)
#define MPI_LOGICAL8 IRIS_BUILTIN_TYPE(8, 69)
#define MPI_REAL2 MPI_DATATYPE_NULL
#define MPI_COMPLEX4 MPI_DATATYPE_NULL
#define MPI_TYPECLASS_REAL 1
#define MPI_TYPECLASS_INTEGER 2
#define MPI_TYPECLASS_COMPLEX 3

/* Reduction operations: kind 4; user ops (MPI_Op_create) follow
 * the predefined ones. A user function computes inoutvec[i] = invec[i] o
 * inoutvec[i] for *len elements of *datatype. */
typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
/* The same with a large count (MPI_Op_create_c). */
typedef void MPI_User_function_c(void *invec, void *inoutvec, MPI_Count *len,
                                 MPI_Datatype *datatype);
#define MPI_OP_NULL ((MPI_Op)IRIS_HANDLE(4, 0))
#define MPI_MAX ((MPI_Op)IRIS_HANDLE(4, 1))
#define MPI_MIN ((MPI_Op)IRIS_HANDLE(4, 2))
#define MPI_SUM ((MPI_Op)IRIS_HANDLE(4, 3))
#define MPI_PROD ((MPI_Op)IRIS_HANDLE(4, 4))
#define MPI_LAND ((MPI_Op)IRIS_HANDLE(4, 5))
#define MPI_BAND ((MPI_Op)IRIS_HANDLE(4, 6))
#define MPI_LOR ((MPI_Op)IRIS_HANDLE(4, 7))
#define MPI_BOR ((MPI_Op)IRIS_HANDLE(4, 8))
#define MPI_LXOR ((MPI_Op)IRIS_HANDLE(4, 9))
#define MPI_BXOR ((MPI_Op)IRIS_HANDLE(4, 10))
#define MPI_MAXLOC ((MPI_Op)IRIS_HANDLE(4, 11))
#define MPI_MINLOC ((MPI_Op)IRIS_HANDLE(4, 12))
#define MPI_REPLACE ((MPI_Op)IRIS_HANDLE(4, 13))
#define MPI_NO_OP ((MPI_Op)IRIS_HANDLE(4, 14))

/* MPI_IN_PLACE: the address -1, which no buffer of one byte or more can
 * start at (it would end past the top of the address space), and which is
 * not NULL, so that it never stands for an empty buffer either. */
#define MPI_IN_PLACE ((void *)-1)

/* Special ranks and tags */
#define MPI_PROC_NULL (-1)
#define MPI_ANY_SOURCE (-2)
#define MPI_ROOT (-3)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)

/* Thread levels */
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* Limits */
#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_PSET_NAME_LEN 256
#define MPI_MAX_STRINGTAG_LEN 256
#define MPI_MAX_DATAREP_STRING 128
#define MPI_BSEND_OVERHEAD 64

/* Error classes */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_ROOT 7
#define MPI_ERR_GROUP 8
#define MPI_ERR_OP 9
#define MPI_ERR_TOPOLOGY 10
#define MPI_ERR_DIMS 11
#define MPI_ERR_ARG 12
#define MPI_ERR_UNKNOWN 13
#define MPI_ERR_TRUNCATE 14
#define MPI_ERR_OTHER 15
#define MPI_ERR_INTERN 16
#define MPI_ERR_IN_STATUS 17
#define MPI_ERR_PENDING 18
#define MPI_ERR_REQUEST 19
#define MPI_ERR_NO_MEM 20
#define MPI_ERR_UNSUPPORTED_OPERATION 21
#define MPI_ERR_PROC_FAILED 22
#define MPI_ERR_ACCESS 23
#define MPI_ERR_AMODE 24
#define MPI_ERR_ASSERT 25
#define MPI_ERR_BAD_FILE 26
#define MPI_ERR_BASE 27
#define MPI_ERR_CONVERSION 28
#define MPI_ERR_DISP 29
#define MPI_ERR_DUP_DATAREP 30
#define MPI_ERR_FILE_EXISTS 31
#define MPI_ERR_FILE_IN_USE 32
#define MPI_ERR_FILE 33
#define MPI_ERR_INFO_KEY 34
#define MPI_ERR_INFO_NOKEY 35
#define MPI_ERR_INFO_VALUE 36
#define MPI_ERR_INFO 37
#define MPI_ERR_IO 38
#define MPI_ERR_KEYVAL 39
#define MPI_ERR_LOCKTYPE 40
#define MPI_ERR_NAME 41
#define MPI_ERR_NOT_SAME 42
#define MPI_ERR_NO_SPACE 43
#define MPI_ERR_NO_SUCH_FILE 44
#define MPI_ERR_PORT 45
#define MPI_ERR_PROC_ABORTED 46
#define MPI_ERR_QUOTA 47
#define MPI_ERR_READ_ONLY 48
#define MPI_ERR_RMA_ATTACH 49
#define MPI_ERR_RMA_CONFLICT 50
#define MPI_ERR_RMA_RANGE 51
#define MPI_ERR_RMA_SHARED 52
#define MPI_ERR_RMA_SYNC 53
#define MPI_ERR_RMA_FLAVOR 54
#define MPI_ERR_SERVICE 55
#define MPI_ERR_SESSION 56
#define MPI_ERR_SIZE 57
#define MPI_ERR_SPAWN 58
#define MPI_ERR_UNSUPPORTED_DATAREP 59
#define MPI_ERR_VALUE_TOO_LARGE 60
#define MPI_ERR_WIN 61
#define MPI_ERR_ERRHANDLER 62 /* MPI-4.1: an invalid error handler */
/* Fault tolerance (ULFM; the MPI-5 draft's names, and the MPIX_ ones
 * programs written for Open MPI and MPICH use). */
#define MPI_ERR_PROC_FAILED_PENDING 63
#define MPI_ERR_REVOKED 64
#define MPIX_ERR_PROC_FAILED MPI_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED_PENDING MPI_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_REVOKED MPI_ERR_REVOKED
#define MPI_ERR_LASTCODE 65

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_TYPES_H_INCLUDED */
