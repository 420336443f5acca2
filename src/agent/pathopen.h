/*
 * pathopen.h - opening a path that a job controls (its output files) without following a
 * symbolic link at any component of the path, for the supervisor and the log shipper.
 */
#ifndef DOCKET_AGENT_PATHOPEN_H
#define DOCKET_AGENT_PATHOPEN_H

#include <stdbool.h>
#include <sys/types.h>

/* open(path, flags, mode), except that a symbolic link (or a /proc magic link) at any
 * component fails with -ELOOP instead of being followed: openat2 with
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it, else a walk from
 * "/" (or the current directory) one directory descriptor at a time, each opened with
 * O_NOFOLLOW. ".." is taken as it comes (a directory, never a link). The descriptor, or
 * -errno. */
int path_open_nofollow(const char *path, int flags, mode_t mode);

/* The same through the walk alone (what a kernel without openat2 gets): for tests. */
int path_open_nofollow_walk(const char *path, int flags, mode_t mode);

#endif
