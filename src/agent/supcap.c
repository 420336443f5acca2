/*
 * supcap.c - the job's output files in the agent's own state directory (its default
 * stdout and stderr, on the node's disk) kept to the node's log limit (issue 33 #11: job
 * output files on nodes were uncapped). Past --log-limit bytes of a run's stream the
 * supervisor writes the cut marker there and gives back the disk of everything after it
 * (holes punched), once a second while the job runs and once at its end. The job writes
 * on undisturbed: its writes land past the marker and are freed at the next look, so the
 * file keeps at most the limit, the marker and one second of output on disk. The shipper
 * stops at the same limit with its own marker (logship.c). A path the job named is the
 * user's file, on the user's filesystem and quota, and is left alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/sup_int.h"
#include "util/clock.h"

static const char cap_marker[] = "\n[docket-node: output cut here, past this node's log limit]\n";

/* The marker at `at` of the file, through a descriptor of our own: the job's has
 * O_APPEND, which would put it at the end. Only into the inode the supervisor made. */
static bool write_marker(const char *path, int64_t dev, int64_t ino, int64_t at)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return false;
    struct stat sb;
    size_t n = sizeof cap_marker - 1;
    bool ok = fstat(fd, &sb) == 0 && (int64_t)sb.st_dev == dev && (int64_t)sb.st_ino == ino &&
              pwrite(fd, cap_marker, n, at) == (ssize_t)n;
    close(fd);
    return ok;
}

static void cap_stream(struct sup *s, int i, int fd)
{
    const struct sup_state *st = &s->st;
    const char *path = i ? st->err_path : st->out_path;
    int64_t start = i ? st->err_start : st->out_start, limit = s->c->log_limit_bytes;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || (int64_t)sb.st_size - start <= limit)
        return;
    int64_t cut = start + limit, keep = cut + (int64_t)sizeof cap_marker - 1;
    if (!s->cut[i]) {
        if (!write_marker(path, i ? st->err_dev : st->out_dev, i ? st->err_ino : st->out_ino,
                          cut)) {
            sup_log("job %llu: cannot mark the cut of '%s': %s", (unsigned long long)s->j->id, path,
                    strerror(errno));
            return;
        }
        s->cut[i] = true;
        sup_log("job %llu: '%s' past the log limit (%lld bytes): cut", (unsigned long long)s->j->id,
                path, (long long)limit);
    }
    if ((int64_t)sb.st_size > keep &&
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, keep,
                  (int64_t)sb.st_size - keep) < 0 &&
        !s->punch_failed) {
        s->punch_failed = true; /* said once: a filesystem without holes stays so */
        sup_log("job %llu: cannot free '%s' past its cut: %s", (unsigned long long)s->j->id, path,
                strerror(errno));
    }
}

void sup_cap_outputs(struct sup *s)
{
    if (s->c->log_limit_bytes <= 0)
        return;
    if (s->own_out && s->out_fd >= 0)
        cap_stream(s, 0, s->out_fd);
    if (s->own_err && s->err_fd >= 0 && s->err_fd != s->out_fd)
        cap_stream(s, 1, s->err_fd);
    s->cap_at = clock_mono_ms() + SUP_CAP_CHECK_MS;
}
