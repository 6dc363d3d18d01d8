/* Iris mpi.h, part: environment, errors, info objects, the MPIX statistics. Programs include
 * <mpi.h>, which includes every part; each part compiles on its own. */
#ifndef IRIS_MPI_ENV_H_INCLUDED
#define IRIS_MPI_ENV_H_INCLUDED

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Sessions (MPI-4): the process sets "mpi://WORLD" and "mpi://SELF"; the
 * Session_init info key "thread_level" names the level wanted
 * ("MPI_THREAD_MULTIPLE", ...). Sessions and MPI_Init may come in any order
 * in one process; the first of them starts MPI and the last ends it. */
int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session);
int MPI_Session_finalize(MPI_Session *session);
int MPI_Session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names);
int MPI_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len,
                             char *pset_name);
int MPI_Session_get_info(MPI_Session session, MPI_Info *info_used);
int MPI_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info);
int MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup);
int MPI_Session_create_errhandler(MPI_Session_errhandler_function *session_errhandler_fn,
                                  MPI_Errhandler *errhandler);
int MPI_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler);
int MPI_Session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler);
int MPI_Session_call_errhandler(MPI_Session session, int errorcode);

/* Errors */
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn,
                               MPI_Errhandler *errhandler);
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);
int MPI_Add_error_class(int *errorclass);
int MPI_Add_error_code(int errorclass, int *errorcode);
int MPI_Add_error_string(int errorcode, const char *string);
/* MPI-4.1: a class must have no codes left; the numbers are not reused. */
int MPI_Remove_error_class(int errorclass);
int MPI_Remove_error_code(int errorcode);
int MPI_Remove_error_string(int errorcode);

/* Info objects */
int MPI_Info_create(MPI_Info *info);
int MPI_Info_set(MPI_Info info, const char *key, const char *value);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag);
int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
int MPI_Info_delete(MPI_Info info, const char *key);
int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
int MPI_Info_free(MPI_Info *info);

/* Iris extension: a runtime statistic or setting by name, for tests and
 * tools: "eager", "eager_sync", "rendezvous", "rendezvous_read" (received
 * by a single-copy read of the sender's memory), "rendezvous_scattered" (of
 * those, scattered blocks), "rendezvous_cma" and "rendezvous_rma" (the same
 * reads by shared memory's CMA and by a netmod's RMA), "window_rma" (puts
 * and gets of one-sided windows done by a netmod's RMA, without the
 * target's help), "rendezvous_pipeline"
 * (received as data packets), "credit_stalls",
 * "credit_packets", "unexpected_depth_peak", "unexpected_bytes_peak" (eager
 * data held for peers), "match_compared" (queue entries the matching engine
 * compared with a key, in all), "match_rebinned" (times a communicator's
 * matching bins doubled or halved as its queues grew or shrank), "recv_unlocked", "recv_aside" and
 * "rendezvous_aside" (MPI_THREAD_MULTIPLE: receives matched without the
 * call lock, eager messages delivered without it, and rendezvous messages
 * answered without it), "data_aside" (the data packets of rendezvous
 * messages delivered without it), "rendezvous_send_aside" and
 * "data_sent_aside" (rendezvous sends whose data may go without it, and
 * their data packets written without it), "unexpected_bytes_bound" (what the peers' credit
 * windows allow in all), "eager_limit", "eager_window",
 * "shm_fragment_size", "net_eager_limit", "net_fragment_size" (the live
 * protocol limits, after capping to a record), "inline_bytes" (eager bytes
 * an unexpected message holds without a buffer of its own). An unknown name
 * is MPI_ERR_ARG. */
int MPIX_Stat_get(const char *name, MPI_Count *value);

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_ENV_H_INCLUDED */
