/*
 * inventory.c - CPUs and memory from the kernel, GPUs from NVML (dlopen at run time) or
 * declared ("8xH100-80GB"). The NVML entry points are declared here from their documented
 * C signatures; nothing of NVML is needed to build. See inventory.h, docs/agent.md.
 */
#define _GNU_SOURCE
#include "agent/inventory.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/parse.h"
#include "util/str.h"

/* NVML's ABI as documented: return codes are ints (0 = success), devices are opaque
 * pointers, memory and utilisation are small structs of these shapes. */
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_util {
    unsigned int gpu, memory;
};
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_count_fn)(unsigned int *);
typedef int (*nvml_handle_fn)(unsigned int, void **);
typedef int (*nvml_str_fn)(void *, char *, unsigned int);
typedef int (*nvml_mem_fn)(void *, struct nvml_memory *);
typedef int (*nvml_util_fn)(void *, struct nvml_util *);
typedef int (*nvml_minor_fn)(void *, unsigned int *);
typedef int (*nvml_uint_fn)(void *, unsigned int *);
typedef int (*nvml_temp_fn)(void *, int, unsigned int *);
typedef int (*nvml_ecc_fn)(void *, int, int, unsigned long long *);
/* XID errors arrive as events: nvmlEventData_t as documented */
struct nvml_event {
    void *device;
    unsigned long long type, data;
    unsigned int gpu_instance, compute_instance;
};
typedef int (*nvml_evset_fn)(void **);
typedef int (*nvml_register_fn)(void *, unsigned long long, void *);
typedef int (*nvml_wait_fn)(void *, struct nvml_event *, unsigned int);
enum {
    NVML_TEMPERATURE_GPU = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
    NVML_VOLATILE_ECC = 0,
    NVML_EVENT_XID = 0x8, /* nvmlEventTypeXidCriticalError */
    NVML_ERROR_TIMEOUT = 10,
};

struct nvml {
    void *dl;
    nvml_init_fn init, shutdown;
    nvml_count_fn count;
    nvml_handle_fn handle;
    nvml_str_fn name, uuid;
    nvml_mem_fn mem;
    nvml_util_fn util;
    nvml_minor_fn minor; /* optional: the device node's minor number */
    /* optional, for usage samples (docs/monitoring.md): each missing one reads unknown */
    nvml_uint_fn power;
    nvml_temp_fn temp;
    nvml_ecc_fn ecc;
    nvml_evset_fn evset_create, evset_free;
    nvml_register_fn evregister;
    nvml_wait_fn evwait;
    void *evset; /* XID events of every GPU, NULL when NVML cannot give them */
    void *dev[INV_MAX_GPUS];
};

int64_t inventory_parse_meminfo(const char *text)
{
    const char *p = strstr(text, "MemTotal:");
    if (!p)
        return -EINVAL;
    p += strlen("MemTotal:");
    while (*p == ' ' || *p == '\t')
        p++;
    char *end;
    errno = 0;
    long long kb = strtoll(p, &end, 10);
    if (end == p || errno || kb <= 0)
        return -EINVAL;
    while (*end == ' ')
        end++;
    if (strncmp(end, "kB", 2) != 0)
        return -EINVAL;
    return kb / 1024;
}

int inventory_host(struct inventory *inv, const char *meminfo_path, char *err, size_t errlen)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    inv->cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                            : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (inv->cpus < 1)
        inv->cpus = 1;
    const char *path = meminfo_path ? meminfo_path : "/proc/meminfo";
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        return -errno;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    int64_t mb = inventory_parse_meminfo(buf);
    if (mb < 0) {
        snprintf(err, errlen, "no MemTotal in '%s'", path);
        return -EINVAL;
    }
    inv->mem_mb = mb;
    return 0;
}

void inventory_type_from_name(const char *name, int64_t mem_mb, char *out, size_t len)
{
    /* keep the words that name the model, drop the vendor and the memory technology */
    char model[64] = "";
    char copy[128];
    str_copy(copy, sizeof copy, name);
    size_t used = 0;
    for (char *w = copy; *w;) {
        while (*w == ' ' || *w == '-')
            w++;
        char *e = w;
        while (*e && *e != ' ' && *e != '-')
            e++;
        char save = *e;
        *e = '\0';
        bool skip = strcasecmp(w, "NVIDIA") == 0 || strcasecmp(w, "Tesla") == 0 ||
                    strcasecmp(w, "GeForce") == 0 || strncasecmp(w, "HBM", 3) == 0 ||
                    strncasecmp(w, "SXM", 3) == 0 || strncasecmp(w, "PCIe", 4) == 0 ||
                    (isdigit((unsigned char)w[0]) && strcasestr(w, "GB") != NULL);
        if (*w && !skip && used + strlen(w) + 2 < sizeof model) {
            if (used)
                model[used++] = '-';
            memcpy(model + used, w, strlen(w) + 1);
            used += strlen(w);
        }
        *e = save;
        w = e;
    }
    if (!model[0])
        str_copy(model, sizeof model, "GPU");
    long gb = (long)((mem_mb + 1023) / 1024);
    /* marketing sizes: 80GB cards report 79.6 GiB or 81559 MiB */
    static const long sizes[] = {8,  12, 16, 24,  32,  40,  48,  64,
                                 80, 94, 96, 120, 141, 144, 180, 192};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (labs(sizes[i] - gb) <= (sizes[i] >= 64 ? 3 : 1)) {
            gb = sizes[i];
            break;
        }
    if (mem_mb > 0)
        snprintf(out, len, "%s-%ldGB", model, gb);
    else
        snprintf(out, len, "%s", model);
}

static void *sym(void *dl, const char *a, const char *b)
{
    void *p = dlsym(dl, a);
    return p ? p : (b ? dlsym(dl, b) : NULL);
}

static int nvml_open(struct nvml **out, const char *lib, char *err, size_t errlen)
{
    if (!lib)
        lib = getenv("DOCKET_NVML_LIB");
    if (!lib || !*lib)
        lib = "libnvidia-ml.so.1";
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(err, errlen, "cannot load '%s': %s", lib, dlerror());
        return -ENOENT;
    }
    struct nvml *n = calloc(1, sizeof *n);
    if (!n) {
        dlclose(dl);
        return -ENOMEM;
    }
    n->dl = dl;
    *(void **)&n->init = sym(dl, "nvmlInit_v2", "nvmlInit");
    *(void **)&n->shutdown = sym(dl, "nvmlShutdown", NULL);
    *(void **)&n->count = sym(dl, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&n->handle = sym(dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&n->name = sym(dl, "nvmlDeviceGetName", NULL);
    *(void **)&n->uuid = sym(dl, "nvmlDeviceGetUUID", NULL);
    *(void **)&n->mem = sym(dl, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&n->util = sym(dl, "nvmlDeviceGetUtilizationRates", NULL);
    *(void **)&n->minor = sym(dl, "nvmlDeviceGetMinorNumber", NULL);
    *(void **)&n->power = sym(dl, "nvmlDeviceGetPowerUsage", NULL);
    *(void **)&n->temp = sym(dl, "nvmlDeviceGetTemperature", NULL);
    *(void **)&n->ecc = sym(dl, "nvmlDeviceGetTotalEccErrors", NULL);
    *(void **)&n->evset_create = sym(dl, "nvmlEventSetCreate", NULL);
    *(void **)&n->evset_free = sym(dl, "nvmlEventSetFree", NULL);
    *(void **)&n->evregister = sym(dl, "nvmlDeviceRegisterEvents", NULL);
    *(void **)&n->evwait = sym(dl, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    if (!n->init || !n->count || !n->handle || !n->name || !n->uuid || !n->mem) {
        snprintf(err, errlen, "'%s' lacks the NVML entry points needed", lib);
        dlclose(dl);
        free(n);
        return -ENOENT;
    }
    int rc = n->init();
    if (rc != 0) {
        snprintf(err, errlen, "nvmlInit failed with NVML error %d", rc);
        dlclose(dl);
        free(n);
        return -EIO;
    }
    *out = n;
    return 0;
}

static void nvml_close(struct nvml *n)
{
    if (!n)
        return;
    if (n->evset && n->evset_free)
        n->evset_free(n->evset);
    if (n->shutdown)
        n->shutdown();
    dlclose(n->dl);
    free(n);
}

/* Register every GPU for XID events; a GPU that cannot be registered reads unknown. */
static void xid_watch(struct inventory *inv)
{
    struct nvml *n = inv->nvml;
    for (int i = 0; i < inv->ngpus; i++)
        inv->gpus[i].xid_errors = -1;
    if (!n->evset_create || !n->evregister || !n->evwait || n->evset_create(&n->evset) != 0) {
        n->evset = NULL;
        return;
    }
    for (int i = 0; i < inv->ngpus; i++)
        if (n->evregister(n->dev[i], NVML_EVENT_XID, n->evset) == 0)
            inv->gpus[i].xid_errors = 0;
}

/* Count the XID events waiting (a bounded number per sample, without blocking). */
static void xid_drain(struct inventory *inv)
{
    struct nvml *n = inv->nvml;
    struct nvml_event ev;
    for (int k = 0; n->evset && k < 1024; k++) {
        memset(&ev, 0, sizeof ev);
        if (n->evwait(n->evset, &ev, 0) != 0)
            break;
        for (int i = 0; i < inv->ngpus; i++)
            if (n->dev[i] == ev.device && inv->gpus[i].xid_errors >= 0 &&
                (ev.type & NVML_EVENT_XID))
                inv->gpus[i].xid_errors++;
    }
}

int inventory_nvml(struct inventory *inv, const char *lib, char *err, size_t errlen)
{
    struct nvml *n = NULL;
    int rc = nvml_open(&n, lib, err, errlen);
    if (rc < 0)
        return rc;
    unsigned int count = 0;
    if ((rc = n->count(&count)) != 0) {
        snprintf(err, errlen, "nvmlDeviceGetCount failed with NVML error %d", rc);
        nvml_close(n);
        return -EIO;
    }
    if (count > INV_MAX_GPUS)
        count = INV_MAX_GPUS;
    inv->ngpus = 0;
    for (unsigned int i = 0; i < count; i++) {
        struct inv_gpu *g = &inv->gpus[inv->ngpus];
        struct nvml_memory m = {0, 0, 0};
        memset(g, 0, sizeof *g);
        if (n->handle(i, &n->dev[i]) != 0 || n->name(n->dev[i], g->name, sizeof g->name) != 0 ||
            n->uuid(n->dev[i], g->uuid, sizeof g->uuid) != 0 || n->mem(n->dev[i], &m) != 0) {
            snprintf(err, errlen, "cannot query GPU %u through NVML", i);
            nvml_close(n);
            inv->ngpus = 0;
            return -EIO;
        }
        g->name[sizeof g->name - 1] = g->uuid[sizeof g->uuid - 1] = '\0';
        g->index = (int)i;
        /* NVML's index is PCI order; the device node /dev/nvidiaN is the driver's own
         * numbering: GPU isolation needs the latter */
        unsigned int minor = i;
        if (n->minor && n->minor(n->dev[i], &minor) != 0)
            minor = i;
        g->minor = (int)minor;
        g->mem_mb = (int64_t)(m.total / (1024 * 1024));
        g->mem_used_mb = (int64_t)(m.used / (1024 * 1024));
        inv->ngpus++;
    }
    inv->nvml = n;
    inv->from_nvml = true;
    xid_watch(inv);
    if (inv->ngpus > 0)
        inventory_type_from_name(inv->gpus[0].name, inv->gpus[0].mem_mb, inv->gpu_type,
                                 sizeof inv->gpu_type);
    inventory_nvml_sample(inv);
    return 0;
}

int inventory_nvml_sample(struct inventory *inv)
{
    struct nvml *n = inv->nvml;
    if (!n)
        return 0;
    for (int i = 0; i < inv->ngpus; i++) {
        struct nvml_util u = {0, 0};
        struct nvml_memory m = {0, 0, 0};
        if (n->util && n->util(n->dev[i], &u) == 0)
            inv->gpus[i].util = (int)u.gpu;
        if (n->mem(n->dev[i], &m) == 0)
            inv->gpus[i].mem_used_mb = (int64_t)(m.used / (1024 * 1024));
        unsigned int mw = 0, t = 0;
        unsigned long long ecc = 0;
        inv->gpus[i].power_mw = n->power && n->power(n->dev[i], &mw) == 0 ? (int64_t)mw : -1;
        inv->gpus[i].temp_c =
            n->temp && n->temp(n->dev[i], NVML_TEMPERATURE_GPU, &t) == 0 ? (int)t : -1;
        inv->gpus[i].ecc_errors = n->ecc && n->ecc(n->dev[i], NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                   NVML_VOLATILE_ECC, &ecc) == 0
                                      ? (int64_t)ecc
                                      : -1;
    }
    xid_drain(inv);
    return 0;
}

int inventory_declared_util(struct inventory *inv, const char *path)
{
    char buf[32];
    int util = -1;
    FILE *f = path && *path ? fopen(path, "re") : NULL;
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        if (parse_int(str_trim(buf), 0, 100, &util) < 0)
            util = -1;
    }
    for (int i = 0; !inv->from_nvml && i < inv->ngpus; i++)
        inv->gpus[i].util = util;
    return util;
}

int inventory_declare(struct inventory *inv, const char *decl, char *err, size_t errlen)
{
    int count = 0;
    char type[64] = "";
    int64_t mem = 0;
    int rc = parse_gpu_decl(decl, &count, type, sizeof type, &mem);
    if (rc < 0) {
        snprintf(err, errlen, "bad GPU declaration '%s' (want COUNTxTYPE, e.g. 8xH100-80GB)", decl);
        return rc;
    }
    if (count > INV_MAX_GPUS) {
        snprintf(err, errlen, "bad GPU declaration '%s': at most %d GPUs per node", decl,
                 INV_MAX_GPUS);
        return -ERANGE;
    }
    inv->ngpus = count;
    inv->from_nvml = false;
    str_copy(inv->gpu_type, sizeof inv->gpu_type, type);
    for (int i = 0; i < count; i++) {
        memset(&inv->gpus[i], 0, sizeof inv->gpus[i]);
        inv->gpus[i].index = i;
        inv->gpus[i].minor = i;
        inv->gpus[i].mem_mb = mem;
        inv->gpus[i].util = inv->gpus[i].temp_c = -1; /* declared GPUs measure nothing */
        inv->gpus[i].mem_used_mb = inv->gpus[i].power_mw = -1;
        inv->gpus[i].ecc_errors = inv->gpus[i].xid_errors = -1;
        str_copy(inv->gpus[i].name, sizeof inv->gpus[i].name, type);
    }
    return 0;
}

void inventory_release(struct inventory *inv)
{
    nvml_close(inv->nvml);
    inv->nvml = NULL;
}
