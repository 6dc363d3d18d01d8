/* Iris: the MPI C interface.
 *
 * Handles are ints. The top four bits name the kind of object, so that a
 * handle of the wrong kind is caught and reported instead of misused:
 *   1 communicator, 3 datatype, 4 op, 5 error handler, 6 message, 7 request.
 * A predefined datatype also carries its extent in bits 8..23.
 */
#ifndef IRIS_MPI_H_INCLUDED
#define IRIS_MPI_H_INCLUDED

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

typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int iris_cancelled;
  MPI_Count iris_bytes; /* bytes received */
} MPI_Status;

#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

/* Communicators */
#define MPI_COMM_NULL ((MPI_Comm)0x10000000)
#define MPI_COMM_WORLD ((MPI_Comm)0x10000001)
#define MPI_COMM_SELF ((MPI_Comm)0x10000002)

/* Groups */
#define MPI_GROUP_NULL ((MPI_Group)0x20000000)
#define MPI_GROUP_EMPTY ((MPI_Group)0x20000001)

/* Results of MPI_Comm_compare and MPI_Group_compare */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

/* Requests and messages */
#define MPI_REQUEST_NULL ((MPI_Request)0x70000000)
#define MPI_MESSAGE_NULL ((MPI_Message)0x60000000)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x6fffffff)

/* Error handlers */
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0x50000000)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x50000001)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)0x50000002)
#define MPI_ERRORS_ABORT ((MPI_Errhandler)0x50000003)

/* Predefined datatypes: 0x34000000 | extent << 8 | index */
#define IRIS_BUILTIN_TYPE(extent, index) ((MPI_Datatype)(0x34000000 | ((extent) << 8) | (index)))
#define MPI_DATATYPE_NULL ((MPI_Datatype)0x30000000)
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
#define MPI_ERR_LASTCODE 63

/* Environment */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Finalize(void);
int MPI_Initialized(int *flag);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Query_thread(int *provided);
int MPI_Is_thread_main(int *flag);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Get_processor_name(char *name, int *resultlen);
double MPI_Wtime(void);
double MPI_Wtick(void);

/* Communicators */
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);

/* Groups */
int MPI_Group_size(MPI_Group group, int *size);
int MPI_Group_rank(MPI_Group group, int *rank);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]);
int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
int MPI_Group_free(MPI_Group *group);

/* Point-to-point */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
int MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count);
int MPI_Status_set_cancelled(MPI_Status *status, int flag);
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);

/* Send modes */
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request);
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request);
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request);
int MPI_Buffer_attach(void *buffer, int size);
int MPI_Buffer_detach(void *buffer_addr, int *size);
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status);

/* Persistent requests */
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request);
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request);
int MPI_Start(MPI_Request *request);
int MPI_Startall(int count, MPI_Request array_of_requests[]);

/* Matched probes */
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status);
int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status);
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
              MPI_Status *status);
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request);

/* Completion */
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]);
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]);
int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status);
int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]);
int MPI_Request_free(MPI_Request *request);
int MPI_Cancel(MPI_Request *request);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);

/* Collectives */
int MPI_Barrier(MPI_Comm comm);

/* Datatypes */
#define MPI_BOTTOM ((void *)0)
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                    MPI_Datatype *newtype);
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype);
int MPI_Type_indexed(int count, const int array_of_blocklengths[],
                     const int array_of_displacements[], MPI_Datatype oldtype,
                     MPI_Datatype *newtype);
int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                             const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                             MPI_Datatype *newtype);
int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_struct(int count, const int array_of_blocklengths[],
                           const MPI_Aint array_of_displacements[],
                           const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype);
int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent);
int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
int MPI_Get_address(const void *location, MPI_Aint *address);
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
             int *position, MPI_Comm comm);
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm);
int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);

/* Errors */
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);

/* Iris extension: a runtime statistic or setting by name, for tests and
 * tools: "eager", "eager_sync", "rendezvous", "rendezvous_cma",
 * "rendezvous_pipeline", "credit_stalls", "credit_packets",
 * "unexpected_depth_peak", "unexpected_bytes_peak" (eager data held for
 * peers), "eager_limit", "eager_window". An unknown name is MPI_ERR_ARG. */
int MPIX_Stat_get(const char *name, MPI_Count *value);

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_H_INCLUDED */
