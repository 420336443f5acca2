/*
 * pathopen.c - a job-controlled path opened with no symbolic link followed at any of its
 * components (issue 33 #11: root opened an output path through a directory symlink the
 * job had swapped in). See pathopen.h.
 */
#define _GNU_SOURCE
#include "agent/pathopen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Step from the directory dfd into its entry `name`, which must be a directory and not a
 * link: O_PATH (search rights are enough, as for a path lookup), O_NOFOLLOW (a link is
 * opened as itself), then fstat tells which it was. The new descriptor or -errno. */
static int step_into(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    int rc = fstat(fd, &sb) < 0     ? -errno
             : S_ISLNK(sb.st_mode)  ? -ELOOP
             : !S_ISDIR(sb.st_mode) ? -ENOTDIR
                                    : 0;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int path_open_nofollow_walk(const char *path, int flags, mode_t mode)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0)
        return -ENOENT;
    if (len >= sizeof buf)
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    int dfd = AT_FDCWD;
    char *p = buf;
    if (*p == '/') {
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return -errno;
        while (*p == '/')
            p++;
    }
    for (char *slash; (slash = strchr(p, '/'));) {
        *slash = '\0';
        char *next = slash + 1;
        while (*next == '/')
            next++;
        if (!*next) /* "dir/": the last component, named as a directory */
            break;
        int nfd = step_into(dfd, p);
        if (dfd != AT_FDCWD)
            close(dfd);
        if (nfd < 0)
            return nfd;
        dfd = nfd;
        p = next;
    }
    int fd = openat(dfd, *p ? p : ".", flags | O_NOFOLLOW, mode);
    int e = errno;
    if (dfd != AT_FDCWD)
        close(dfd);
    return fd < 0 ? -e : fd;
}

int path_open_nofollow(const char *path, int flags, mode_t mode)
{
#ifdef SYS_openat2
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_NOFOLLOW),
        /* a mode only with O_CREAT or O_TMPFILE (which contains O_DIRECTORY's bit) */
        .mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (fd >= 0)
        return (int)fd;
    /* ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not know it */
    if (errno != ENOSYS && errno != EPERM)
        return -errno;
#endif
    return path_open_nofollow_walk(path, flags, mode);
}
