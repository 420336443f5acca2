/*
 * parse.c - parsers for what people type (durations, sizes, signals, integers, GPU
 * declarations, labels, job-array specs) and formatters for what they read back.
 * See parse.h. Every parser is strict: the whole string must match, no blanks, no
 * signs where none make sense; outputs are written only on success. No libc number
 * parser is used (they accept blanks and signs we refuse), so overflow is checked here.
 */
#define _POSIX_C_SOURCE 200809L
#include "util/parse.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/str.h"

#define ARRAY_MAX_INDICES 100000

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads a run of digits at *p into *v (<= INT64_MAX). -EINVAL if none, -ERANGE if too
 * big; *p is moved past the digits either way. */
static int scan_u63(const char **p, int64_t *v)
{
    const char *s = *p;
    int64_t acc = 0;
    bool big = false;

    if (!is_digit(*s))
        return -EINVAL;
    for (; is_digit(*s); s++) {
        int d = *s - '0';
        if (acc > (INT64_MAX - d) / 10)
            big = true;
        else
            acc = acc * 10 + d;
    }
    *p = s;
    if (big)
        return -ERANGE;
    *v = acc;
    return 0;
}

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    const char *p = s;
    bool neg = false;
    int64_t v = 0;
    int rc;

    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    /* INT64_MIN's magnitude is one past INT64_MAX: special-case it. */
    if (neg && strcmp(p, "9223372036854775808") == 0) {
        if (INT64_MIN < min)
            return -ERANGE;
        *out = INT64_MIN;
        return 0;
    }
    rc = scan_u63(&p, &v);
    if (rc == -EINVAL || *p != '\0')
        return -EINVAL;
    if (rc < 0)
        return rc;
    if (neg)
        v = -v;
    if (v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

int parse_int(const char *s, int min, int max, int *out)
{
    int64_t v;
    int rc = parse_int64(s, min, max, &v);

    if (rc == 0)
        *out = (int)v;
    return rc;
}

int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    size_t i;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

/* ---- durations ---------------------------------------------------------------- */

struct unit {
    const char *name;
    int64_t mult;
};

static const struct unit duration_units[] = {
    {"w", 7LL * 24 * 3600 * 1000},
    {"d", 24LL * 3600 * 1000},
    {"h", 3600LL * 1000},
    {"m", 60LL * 1000},
    {"s", 1000},
    {"ms", 1},
};
#define N_DURATION_UNITS (sizeof(duration_units) / sizeof(duration_units[0]))

/* Index of the unit spelled by the letters at *p (moved past them), or -1. */
static int duration_unit(const char **p)
{
    const char *s = *p;
    size_t n = 0, i;

    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z'))
        n++;
    for (i = 0; i < N_DURATION_UNITS; i++) {
        if (strlen(duration_units[i].name) == n && strncmp(s, duration_units[i].name, n) == 0) {
            *p = s + n;
            return (int)i;
        }
    }
    return -1;
}

int parse_duration_ms(const char *s, int64_t *out_ms)
{
    const char *p = s;
    int64_t total = 0, v;
    int last = -1, u, rc;

    if (*p == '-')
        return is_digit(p[1]) ? -ERANGE : -EINVAL;
    rc = scan_u63(&p, &v);
    if (rc == -EINVAL)
        return rc;
    if (*p == '\0') { /* bare integer: seconds */
        if (rc < 0 || v > INT64_MAX / 1000)
            return -ERANGE;
        *out_ms = v * 1000;
        return 0;
    }
    for (;;) {
        u = duration_unit(&p);
        if (u < 0 || u <= last) /* unknown unit, repeated or out of order */
            return -EINVAL;
        if (rc < 0 || v > INT64_MAX / duration_units[u].mult ||
            v * duration_units[u].mult > INT64_MAX - total)
            return -ERANGE;
        total += v * duration_units[u].mult;
        last = u;
        if (*p == '\0')
            break;
        rc = scan_u63(&p, &v);
        if (rc == -EINVAL)
            return rc;
    }
    *out_ms = total;
    return 0;
}

/* ---- sizes -------------------------------------------------------------------- */

/* Binary exponent (bytes = value << shift) of the unit at p, or -1. "" means MiB. */
static int size_shift(const char *p)
{
    static const char letters[] = "KMGT";
    const char *l;
    int shift;

    if (*p == '\0')
        return 20;
    if (strcasecmp(p, "B") == 0)
        return 0;
    l = strchr(letters, *p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    if (*p == '\0' || !l)
        return -1;
    shift = 10 * (int)(l - letters + 1);
    p++;
    if (*p == '\0' || strcasecmp(p, "B") == 0 || strcasecmp(p, "iB") == 0)
        return shift;
    return -1;
}

int parse_size_mb(const char *s, int64_t *out_mb)
{
    const char *p = s;
    int64_t ip = 0;
    unsigned __int128 num, den = 1, r;
    int shift, rc, digits = 0;

    if (*p == '-')
        return is_digit(p[1]) ? -ERANGE : -EINVAL;
    rc = scan_u63(&p, &ip);
    if (rc == -EINVAL)
        return rc;
    num = (unsigned __int128)ip;
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return -EINVAL;
        for (; is_digit(*p); p++, digits++) {
            if (digits >= 9)
                return -EINVAL; /* more precision than any size needs */
            num = num * 10 + (unsigned)(*p - '0');
            den *= 10;
        }
    }
    shift = size_shift(p);
    if (shift < 0)
        return -EINVAL;
    if (rc < 0)
        return rc;
    /* MiB = ceil(num / den * 2^shift / 2^20); num < 2^93 so num << 20 fits in 128 bits */
    if (shift >= 20) {
        num <<= shift - 20;
    } else {
        den <<= 20 - shift;
    }
    r = (num + den - 1) / den;
    if (r > INT64_MAX)
        return -ERANGE;
    *out_mb = (int64_t)r;
    return 0;
}

/* ---- signals ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int sig;
} signals[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},   {"IOT", SIGIOT},   {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"KILL", SIGKILL},   {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},   {"CLD", SIGCHLD},  {"CONT", SIGCONT},
    {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},
    {"URG", SIGURG},       {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},     {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"POLL", SIGPOLL},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},
};
#define N_SIGNALS (sizeof(signals) / sizeof(signals[0]))

int parse_signal(const char *s, int *out_sig)
{
    size_t i;

    if (is_digit(s[0]))
        return parse_int(s, 1, 64, out_sig);
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (i = 0; i < N_SIGNALS; i++) {
        if (strcasecmp(s, signals[i].name) == 0) {
            *out_sig = signals[i].sig;
            return 0;
        }
    }
    return -EINVAL;
}

const char *signal_name(int sig)
{
    static const char *const names[] = {
        [SIGHUP] = "SIGHUP",       [SIGINT] = "SIGINT",       [SIGQUIT] = "SIGQUIT",
        [SIGILL] = "SIGILL",       [SIGTRAP] = "SIGTRAP",     [SIGABRT] = "SIGABRT",
        [SIGBUS] = "SIGBUS",       [SIGFPE] = "SIGFPE",       [SIGKILL] = "SIGKILL",
        [SIGUSR1] = "SIGUSR1",     [SIGSEGV] = "SIGSEGV",     [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE",     [SIGALRM] = "SIGALRM",     [SIGTERM] = "SIGTERM",
        [SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD",     [SIGCONT] = "SIGCONT",
        [SIGSTOP] = "SIGSTOP",     [SIGTSTP] = "SIGTSTP",     [SIGTTIN] = "SIGTTIN",
        [SIGTTOU] = "SIGTTOU",     [SIGURG] = "SIGURG",       [SIGXCPU] = "SIGXCPU",
        [SIGXFSZ] = "SIGXFSZ",     [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
        [SIGWINCH] = "SIGWINCH",   [SIGIO] = "SIGIO",         [SIGPWR] = "SIGPWR",
        [SIGSYS] = "SIGSYS",
    };

    if (sig <= 0 || (size_t)sig >= sizeof(names) / sizeof(names[0]) || !names[sig])
        return "SIG?";
    return names[sig];
}

/* ---- GPU declarations and labels ----------------------------------------------- */

/* "H100-80GB" carries its per-GPU memory: the size after the last '-', when it has a
 * unit letter. 0 when the type says nothing about memory. */
static int64_t gpu_type_mem(const char *type)
{
    const char *dash = strrchr(type, '-');
    int64_t mb;

    if (!dash || !is_digit(dash[1]) || !strpbrk(dash + 1, "KkMmGgTt"))
        return 0;
    if (parse_size_mb(dash + 1, &mb) < 0)
        return 0;
    return mb;
}

int parse_gpu_decl(const char *s, int *count, char *type, size_t type_len, int64_t *mem_mb)
{
    char cnt[16], name[64] = "";
    const char *x = s, *colon;
    int64_t mem = 0;
    size_t n;
    int c, rc;

    while (is_digit(*x))
        x++;
    n = (size_t)(x - s);
    if (n == 0 || n >= sizeof(cnt))
        return n == 0 ? -EINVAL : -ERANGE;
    memcpy(cnt, s, n);
    cnt[n] = '\0';
    if (*x != '\0' && *x != 'x' && *x != 'X')
        return -EINVAL;
    rc = parse_int(cnt, 0, 4096, &c);
    if (rc < 0)
        return rc;
    if (*x != '\0') {
        colon = strchr(x + 1, ':');
        n = colon ? (size_t)(colon - x - 1) : strlen(x + 1);
        if (n == 0 || n >= sizeof(name))
            return n == 0 ? -EINVAL : -ERANGE;
        memcpy(name, x + 1, n);
        name[n] = '\0';
        if (!str_is_name(name))
            return -EINVAL;
        if (colon) {
            rc = parse_size_mb(colon + 1, &mem);
            if (rc < 0)
                return rc;
            if (mem == 0)
                return -ERANGE;
        } else {
            mem = gpu_type_mem(name);
        }
        if (c == 0)
            return -ERANGE; /* "0xH100" declares a type with no GPUs */
    }
    if (type && strlen(name) >= type_len)
        return -ERANGE;
    *count = c;
    if (type)
        memcpy(type, name, strlen(name) + 1);
    if (mem_mb)
        *mem_mb = mem;
    return 0;
}

static bool is_label_value_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' ||
           c == '_' || c == '-' || c == ':' || c == '/';
}

int parse_label(const char *s, char *key, size_t klen, char *value, size_t vlen)
{
    const char *eq = strchr(s, '=');
    char k[64];
    size_t kn, vn, i;

    if (!eq)
        return -EINVAL;
    kn = (size_t)(eq - s);
    vn = strlen(eq + 1);
    if (kn == 0 || kn >= sizeof(k) || vn == 0 || vn > 63)
        return -EINVAL;
    memcpy(k, s, kn);
    k[kn] = '\0';
    if (!str_is_name(k))
        return -EINVAL;
    for (i = 0; i < vn; i++) /* a node's features are a list (str_is_label_value) */
        if (!is_label_value_char(eq[1 + i]) && !(eq[1 + i] == ',' && !strcmp(k, "features")))
            return -EINVAL;
    if (kn >= klen || vn >= vlen)
        return -ERANGE;
    memcpy(key, k, kn + 1);
    memcpy(value, eq + 1, vn + 1);
    return 0;
}

/* ---- job arrays --------------------------------------------------------------- */

struct array_item {
    int64_t lo, hi, step;
};

/* One comma-separated element "N", "N-M" or "N-M:S" of [p, end). */
static int array_item_parse(const char *p, const char *end, struct array_item *it)
{
    char buf[48];
    char *dash, *colon;
    size_t n = (size_t)(end - p);
    int rc;

    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    it->step = 1;
    colon = strchr(buf, ':');
    if (colon) {
        *colon = '\0';
        rc = parse_int64(colon + 1, 1, INT32_MAX, &it->step);
        if (rc < 0 || colon[1] == '+')
            return rc < 0 ? rc : -EINVAL;
    }
    dash = strchr(buf, '-');
    if (dash) {
        *dash = '\0';
        if (dash[1] == '-' || dash[1] == '+' || buf[0] == '+')
            return -EINVAL;
        rc = parse_int64(dash + 1, 0, INT32_MAX, &it->hi);
        if (rc < 0)
            return rc;
    } else if (colon) {
        return -EINVAL; /* a step needs a range */
    }
    if (buf[0] == '+' || buf[0] == '-')
        return buf[0] == '-' ? -ERANGE : -EINVAL;
    rc = parse_int64(buf, 0, INT32_MAX, &it->lo);
    if (rc < 0)
        return rc;
    if (!dash)
        it->hi = it->lo;
    return it->lo <= it->hi ? 0 : -EINVAL;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

/* Parses every element of s[0, end) and expands them, sorted, without duplicates, into
 * a new array in *all (caller frees). */
static int array_expand(const char *s, const char *end, int32_t **all, size_t *n_all)
{
    struct array_item it;
    const char *p = s, *comma;
    int32_t *v = NULL;
    size_t total = 0, n = 0, i, j;
    int rc;

    /* First pass: validate and count, so the cap holds before any allocation. */
    for (p = s; p <= end; p = comma + 1) {
        comma = memchr(p, ',', (size_t)(end - p));
        if (!comma)
            comma = end;
        rc = array_item_parse(p, comma, &it);
        if (rc < 0)
            return rc;
        total += (size_t)((it.hi - it.lo) / it.step + 1);
        if (total > ARRAY_MAX_INDICES)
            return -ERANGE;
    }
    v = malloc(total * sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (p = s; p <= end; p = comma + 1) {
        comma = memchr(p, ',', (size_t)(end - p));
        if (!comma)
            comma = end;
        (void)array_item_parse(p, comma, &it);
        for (i = 0; it.lo + (int64_t)i * it.step <= it.hi; i++)
            v[n++] = (int32_t)(it.lo + (int64_t)i * it.step);
    }
    qsort(v, n, sizeof(*v), cmp_i32);
    for (i = j = 0; i < n; i++)
        if (j == 0 || v[i] != v[j - 1])
            v[j++] = v[i];
    *all = v;
    *n_all = j;
    return 0;
}

int parse_array_spec(const char *s, int32_t *indices, size_t max, size_t *count, int *limit)
{
    const char *pct = strchr(s, '%');
    const char *end = pct ? pct : s + strlen(s);
    int32_t *all = NULL;
    size_t n = 0;
    int lim = 0, rc;

    if (pct) {
        if (pct[1] == '+')
            return -EINVAL;
        rc = parse_int(pct + 1, 1, ARRAY_MAX_INDICES, &lim);
        if (rc < 0)
            return rc;
    }
    rc = array_expand(s, end, &all, &n);
    if (rc < 0)
        return rc;
    if (indices && n > max) {
        free(all);
        return -ERANGE;
    }
    if (indices && n)
        memcpy(indices, all, n * sizeof(*all));
    free(all);
    *count = n;
    if (limit)
        *limit = lim;
    return 0;
}

/* ---- formatters --------------------------------------------------------------- */

void format_duration(int64_t ms, char *buf, size_t len)
{
    static const struct unit units[] = {
        {"d", 24LL * 3600 * 1000},
        {"h", 3600LL * 1000},
        {"m", 60LL * 1000},
        {"s", 1000},
    };
    const char *sign = ms < 0 ? "-" : "";
    uint64_t v = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    size_t i;

    if (len == 0)
        return;
    if (v < 1000) {
        snprintf(buf, len, v ? "%s%llums" : "0s", sign, (unsigned long long)v);
        return;
    }
    for (i = 0; i < 3 && v < (uint64_t)units[i].mult; i++)
        ;
    {
        uint64_t big = v / (uint64_t)units[i].mult;
        uint64_t rest = i < 3 ? v % (uint64_t)units[i].mult / (uint64_t)units[i + 1].mult : 0;

        if (rest)
            snprintf(buf, len, "%s%llu%s%llu%s", sign, (unsigned long long)big, units[i].name,
                     (unsigned long long)rest, units[i + 1].name);
        else
            snprintf(buf, len, "%s%llu%s", sign, (unsigned long long)big, units[i].name);
    }
}

/* The largest whole unit of a positive span: "3m", "2h", "5d". */
static void format_one_unit(uint64_t ms, char *buf, size_t len)
{
    if (ms >= 86400000ULL)
        snprintf(buf, len, "%llud", (unsigned long long)(ms / 86400000ULL));
    else if (ms >= 3600000ULL)
        snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000ULL));
    else if (ms >= 60000ULL)
        snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000ULL));
    else
        snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000ULL));
}

void format_relative(int64_t then_ms, int64_t now_ms, char *buf, size_t len)
{
    bool future = then_ms > now_ms;
    uint64_t d =
        future ? (uint64_t)then_ms - (uint64_t)now_ms : (uint64_t)now_ms - (uint64_t)then_ms;
    char span[32];

    if (len == 0)
        return;
    if (d < 5000) {
        snprintf(buf, len, "just now");
        return;
    }
    format_one_unit(d, span, sizeof(span));
    if (future)
        snprintf(buf, len, "in ~%s", span);
    else
        snprintf(buf, len, "%s ago", span);
}

void format_size_mb(int64_t mb, char *buf, size_t len)
{
    static const char units[] = "MGTPE";
    const char *sign = mb < 0 ? "-" : "";
    uint64_t v = mb < 0 ? (uint64_t)0 - (uint64_t)mb : (uint64_t)mb;
    uint64_t scale = 1, tenths;
    int u = 0;

    if (len == 0)
        return;
    while (u < 4 && v >= scale * 1024) {
        scale *= 1024;
        u++;
    }
    /* tenths of the unit, rounded to nearest; v / scale < 1024 * 1024 so no overflow */
    tenths = (v / scale) * 10 + ((v % scale) * 10 + scale / 2) / scale;
    if (tenths % 10 == 0)
        snprintf(buf, len, "%s%llu%c", sign, (unsigned long long)(tenths / 10), units[u]);
    else
        snprintf(buf, len, "%s%llu.%llu%c", sign, (unsigned long long)(tenths / 10),
                 (unsigned long long)(tenths % 10), units[u]);
}
