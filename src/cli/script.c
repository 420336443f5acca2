/*
 * script.c - the directives of a batch script read into a job submission (spec.h
 * spec_parse_script): the comment lines after the "#!" line up to the first command, as
 * sbatch reads them; #DOCKET lines take docket's flags (spec.c), #SBATCH and #SLURM lines
 * sbatch's options (sbatch.c). An error names the line.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/spec.h"
#include "cli/spec_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/opt.h"

static int docket_words(json_t *spec, char **w, int n, char *err, size_t errlen)
{
    struct opt_iter it;
    const char *v;
    int id;

    opt_iter_init(&it, n, w, 0);
    while ((id = opt_next(&it, spec_submit_opts, &v, err, errlen)) != OPT_DONE) {
        if (id == OPT_ERROR)
            return -EINVAL;
        if (id == OPT_POSITIONAL) {
            snprintf(err, errlen, "unexpected word '%.60s'", v);
            return -EINVAL;
        }
        if (id >= SO_JSON) {
            snprintf(err, errlen, "%s is not a job option", opt_name(spec_submit_opts, id));
            return -EINVAL;
        }
        if (spec_apply(spec, id, v, err, errlen))
            return -EINVAL;
    }
    if (it.index < n) {
        snprintf(err, errlen, "unexpected '--'");
        return -EINVAL;
    }
    return 0;
}

struct line_env {
    struct spec_env env;
    const struct spec_env *outer;
    int line;
};

static void line_warn(void *arg, const char *msg)
{
    struct line_env *le = arg;
    char buf[600];

    snprintf(buf, sizeof(buf), "line %d: %s", le->line, msg);
    le->outer->warn(le->outer->warn_arg, buf);
}

/* One directive line (NUL-terminated): #DOCKET, #SBATCH or sbatch's old #SLURM. */
static int directive(json_t *spec, const char *line, struct line_env *le, char *err, size_t errlen)
{
    char buf[MAX_LINE + 1];
    char *w[MAX_WORDS];
    bool docket = !strncmp(line, "#DOCKET", 7);
    const char *rest = line + (strncmp(line, "#SLURM", 6) ? 7 : 6);
    int n;

    n = opt_split_words(rest, buf, sizeof(buf), w, MAX_WORDS);
    if (n < 0) {
        snprintf(err, errlen, n == -EINVAL ? "unterminated quote" : "too many words");
        return -EINVAL;
    }
    if (!docket)
        return spec_sbatch_words(spec, w, n, le->outer && le->outer->warn ? &le->env : le->outer,
                                 err, errlen);
    return docket_words(spec, w, n, err, errlen);
}

/* "#SBATCH" followed by a blank or the end ("#SBATCHX" is an ordinary comment). */
static bool magic(const char *p, const char *word)
{
    size_t n = strlen(word);

    return !strncmp(p, word, n) && (!p[n] || p[n] == ' ' || p[n] == '\t');
}

/* sbatch reads #SBATCH (and #SLURM) only at the start of a line; #DOCKET may be indented. */
static bool is_directive(const char *line, const char *p, bool *slurm)
{
    *slurm = p == line && (magic(p, "#SBATCH") || magic(p, "#SLURM"));
    return *slurm || magic(p, "#DOCKET");
}

int spec_parse_script(json_t *spec, const char *text, size_t len, const struct spec_env *env,
                      char *err, size_t errlen)
{
    struct line_env le = {.outer = env, .line = 0};
    json_t *tmp = json_object();
    size_t pos = 0;
    char msg[400];
    bool slurm = false;

    le.env.partition_map = env ? env->partition_map : NULL;
    le.env.raw = env && env->raw;
    le.env.warn = line_warn;
    le.env.warn_arg = &le;
    while (pos < len) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        char line[MAX_LINE + 1];
        const char *p;
        bool is_slurm;

        pos += n + 1;
        le.line++;
        if (n > MAX_LINE) {
            if (memchr(start, '\0', n) == NULL && start[0] != '#')
                break; /* a long command line: directives are over */
            snprintf(err, errlen, "line %d: longer than %d bytes", le.line, MAX_LINE);
            goto fail;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        if (strlen(line) != n) {
            snprintf(err, errlen, "line %d: contains a NUL byte", le.line);
            goto fail;
        }
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0'; /* a script written on Windows */
        p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (le.line == 1 && !strncmp(p, "#!", 2))
            continue;
        if (!*p)
            continue;
        if (*p != '#')
            break;
        if (!is_directive(line, p, &is_slurm))
            continue;
        slurm |= is_slurm;
        if (directive(tmp, p, &le, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "line %d: %s", le.line, msg);
            goto fail;
        }
    }
    /* a script with sbatch's directives is read as sbatch reads it, to the end */
    if (slurm && (len < 2 || strncmp(text, "#!", 2))) {
        snprintf(err, errlen,
                 "line 1: a batch script must start with #! and the path of its interpreter "
                 "(e.g. #!/bin/bash), as sbatch requires");
        goto fail;
    }
    if (slurm && !(env && env->raw) && spec_slurm_finish(tmp, msg, sizeof(msg)) < 0) {
        snprintf(err, errlen, "#SBATCH lines: %s", msg);
        goto fail;
    }
    spec_merge(spec, tmp);
    json_decref(tmp);
    return 0;
fail:
    json_decref(tmp);
    return -EINVAL;
}
