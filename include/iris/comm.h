/* Iris mpi.h, part: communicators, intercommunicators, attributes, groups. Programs include
 * <mpi.h>, which includes every part; each part compiles on its own. */
#ifndef IRIS_MPI_COMM_H_INCLUDED
#define IRIS_MPI_COMM_H_INCLUDED

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* Intercommunicators: point-to-point, Comm_dup/idup, Comm_free, Comm_compare,
 * attributes and Intercomm_merge work; collectives, topologies and the
 * other constructors report MPI_ERR_COMM on them (not supported yet).
 * remote_size and remote_group of an intracommunicator are MPI_ERR_COMM. */
int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
int MPI_Comm_remote_size(MPI_Comm comm, int *size);
int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);
int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                         int remote_leader, int tag, MPI_Comm *newintercomm);
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm);
/* Collective over the members of group only; tag tells concurrent calls apart. */
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
/* The duplicate is made at once: the request is already complete. */
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request);
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
/* Hints are kept as given (Iris acts on none) and returned by get_info;
 * MPI_Comm_dup copies them, dup_with_info takes the new ones instead. */
int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);

/* MPI-4 constructors from groups (any group of MPI_COMM_WORLD's processes;
 * the string tag keeps concurrent calls apart), Info_create_env, and
 * Comm_disconnect (frees the communicator: Iris starts no other jobs). */
int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                               MPI_Errhandler errhandler, MPI_Comm *newcomm);
int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                     MPI_Group remote_group, int remote_leader,
                                     const char *stringtag, MPI_Info info,
                                     MPI_Errhandler errhandler, MPI_Comm *newintercomm);
int MPI_Info_create_env(int argc, char *argv[], MPI_Info *info);
int MPI_Get_hw_resource_info(MPI_Info *hw_info); /* MPI-4.1: an empty info */
int MPI_Comm_disconnect(MPI_Comm *comm);
int MPI_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[],
                               const MPI_Count array_of_subsizes[],
                               const MPI_Count array_of_starts[], int order, MPI_Datatype oldtype,
                               MPI_Datatype *newtype);
int MPI_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                             const int array_of_distribs[], const int array_of_dargs[],
                             const int array_of_psizes[], int order, MPI_Datatype oldtype,
                             MPI_Datatype *newtype);

/* Attribute caching. Copy callbacks run on MPI_Comm_dup/idup/dup_with_info
 * (MPI_Type_dup), delete callbacks on MPI_Comm_free (MPI_Type_free),
 * delete_attr, set_attr replacing a value, and for MPI_COMM_SELF at the
 * start of MPI_Finalize, the last set first. */
typedef int MPI_Comm_copy_attr_function(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Comm_delete_attr_function(MPI_Comm comm, int comm_keyval, void *attribute_val,
                                          void *extra_state);
typedef int MPI_Type_copy_attr_function(MPI_Datatype oldtype, int type_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Type_delete_attr_function(MPI_Datatype datatype, int type_keyval,
                                          void *attribute_val, void *extra_state);
typedef int MPI_Win_copy_attr_function(MPI_Win oldwin, int win_keyval, void *extra_state,
                                       void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Win_delete_attr_function(MPI_Win win, int win_keyval, void *attribute_val,
                                         void *extra_state);
typedef int MPI_Copy_function(MPI_Comm oldcomm, int keyval, void *extra_state,
                              void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Delete_function(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state);
/* The predefined callbacks: null copy (flag 0), dup (copies the pointer
 * value, flag 1), null delete. Every handle is an int, so one function
 * serves communicators, datatypes, windows and the MPI-1 names. */
int iris_attr_null_copy_fn(int oldobj, int keyval, void *extra_state, void *attribute_val_in,
                           void *attribute_val_out, int *flag);
int iris_attr_dup_fn(int oldobj, int keyval, void *extra_state, void *attribute_val_in,
                     void *attribute_val_out, int *flag);
int iris_attr_null_delete_fn(int obj, int keyval, void *attribute_val, void *extra_state);
#define MPI_COMM_NULL_COPY_FN iris_attr_null_copy_fn
#define MPI_COMM_DUP_FN iris_attr_dup_fn
#define MPI_COMM_NULL_DELETE_FN iris_attr_null_delete_fn
#define MPI_TYPE_NULL_COPY_FN iris_attr_null_copy_fn
#define MPI_TYPE_DUP_FN iris_attr_dup_fn
#define MPI_TYPE_NULL_DELETE_FN iris_attr_null_delete_fn
#define MPI_WIN_NULL_COPY_FN iris_attr_null_copy_fn
#define MPI_WIN_DUP_FN iris_attr_dup_fn
#define MPI_WIN_NULL_DELETE_FN iris_attr_null_delete_fn
#define MPI_NULL_COPY_FN iris_attr_null_copy_fn
#define MPI_DUP_FN iris_attr_dup_fn
#define MPI_NULL_DELETE_FN iris_attr_null_delete_fn
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                           void *extra_state);
int MPI_Comm_free_keyval(int *comm_keyval);
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                           MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                           void *extra_state);
int MPI_Type_free_keyval(int *type_keyval);
int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag);
int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
/* The MPI-1 names (deprecated, removed in MPI-4 but still linked by old codes):
 * communicator keyvals and attributes, as the calls above. */
int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                      void *extra_state);
int MPI_Keyval_free(int *keyval);
int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
int MPI_Attr_delete(MPI_Comm comm, int keyval);

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
/* Ranges are (first, last, stride) triplets; strides may be negative. */
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);

/* Dynamic processes between running jobs: ports, connect and accept (the
 * intercommunicator of two groups, of one job or two), join over a socket,
 * and names published in a directory shared by the jobs of a host
 * (IRIS_NAMESERV_DIR). MPI_Comm_connect waits IRIS_CONNECT_TIMEOUT seconds
 * for its accept, then returns MPI_ERR_PORT. */
int MPI_Open_port(MPI_Info info, char *port_name);
int MPI_Close_port(const char *port_name);
int MPI_Comm_accept(const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                    MPI_Comm *newcomm);
int MPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                     MPI_Comm *newcomm);
int MPI_Comm_join(int fd, MPI_Comm *intercomm);
int MPI_Publish_name(const char *service_name, MPI_Info info, const char *port_name);
int MPI_Unpublish_name(const char *service_name, MPI_Info info, const char *port_name);
int MPI_Lookup_name(const char *service_name, MPI_Info info, char *port_name);

/* Spawning: the children start as a job of their own on this host (info
 * keys host (this host only), wdir, path, soft) and their MPI_Init connects
 * to the parents; MPI_Comm_spawn_multiple's commands make one world of
 * children, MPI_APPNUM numbering them. */
int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                   MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]);
int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                            const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                            MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]);
int MPI_Comm_get_parent(MPI_Comm *parent);

#ifdef __cplusplus
}
#endif

#endif /* IRIS_MPI_COMM_H_INCLUDED */
