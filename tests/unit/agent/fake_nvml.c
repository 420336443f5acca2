/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 with two GPUs, built as a shared module
 * so the inventory's dlopen path is exercised on machines without NVIDIA hardware. It
 * implements only the entry points the agent resolves, with NVML's documented shapes.
 */
#include <string.h>

struct fake_memory {
    unsigned long long total, free, used;
};
struct fake_util {
    unsigned int gpu, memory;
};

static int devs[2];
static int inited;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h);
int nvmlDeviceGetName(void *h, char *buf, unsigned int len);
int nvmlDeviceGetUUID(void *h, char *buf, unsigned int len);
int nvmlDeviceGetMemoryInfo(void *h, struct fake_memory *m);
int nvmlDeviceGetUtilizationRates(void *h, struct fake_util *u);

int nvmlInit_v2(void)
{
    inited = 1;
    return 0;
}
int nvmlShutdown(void)
{
    inited = 0;
    return 0;
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!inited)
        return 1; /* NVML_ERROR_UNINITIALIZED */
    *n = 2;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
    if (i >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *h = &devs[i];
    return 0;
}

static int idx(void *h)
{
    return (int)((int *)h - devs);
}

int nvmlDeviceGetName(void *h, char *buf, unsigned int len)
{
    (void)h;
    const char *n = "NVIDIA H100 80GB HBM3";
    if (len <= strlen(n))
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    memcpy(buf, n, strlen(n) + 1);
    return 0;
}

int nvmlDeviceGetUUID(void *h, char *buf, unsigned int len)
{
    const char *u = idx(h) ? "GPU-00000000-0000-0000-0000-000000000001"
                           : "GPU-00000000-0000-0000-0000-000000000000";
    if (len <= strlen(u))
        return 7;
    memcpy(buf, u, strlen(u) + 1);
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *h, struct fake_memory *m)
{
    m->total = 85520809984ULL; /* what an H100 80GB reports: 81559 MiB */
    m->used = idx(h) ? 1024ULL * 1024 * 1024 : 0;
    m->free = m->total - m->used;
    return 0;
}

int nvmlDeviceGetUtilizationRates(void *h, struct fake_util *u)
{
    u->gpu = idx(h) ? 75 : 5;
    u->memory = 0;
    return 0;
}

/* The driver numbers its device nodes in its own order: here the reverse of NVML's. */
int nvmlDeviceGetMinorNumber(void *h, unsigned int *minor);
int nvmlDeviceGetMinorNumber(void *h, unsigned int *minor)
{
    *minor = idx(h) ? 0 : 1;
    return 0;
}

/* Usage samples: power, temperature, volatile uncorrected ECC, and XID events (GPU 1
 * has two waiting, delivered one per nvmlEventSetWait call). */
struct fake_event {
    void *device;
    unsigned long long type, data;
    unsigned int gi, ci;
};
static int evset, registered, xids_left = 2;

int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw);
int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw)
{
    *mw = idx(h) ? 350000 : 70000;
    return 0;
}

int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *t);
int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *t)
{
    if (sensor != 0)
        return 2;
    *t = idx(h) ? 71 : 34;
    return 0;
}

int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *n);
int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *n)
{
    if (type != 1 || counter != 0)
        return 2;
    if (!idx(h))
        return 3; /* NVML_ERROR_NOT_SUPPORTED: GPU 0 has no ECC */
    *n = 4;
    return 0;
}

int nvmlEventSetCreate(void **set);
int nvmlEventSetCreate(void **set)
{
    *set = &evset;
    return 0;
}

int nvmlEventSetFree(void *set);
int nvmlEventSetFree(void *set)
{
    (void)set;
    return 0;
}

int nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set);
int nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set)
{
    (void)h;
    if (set != &evset || !(types & 0x8))
        return 2;
    registered++;
    return 0;
}

int nvmlEventSetWait_v2(void *set, struct fake_event *ev, unsigned int timeout_ms);
int nvmlEventSetWait_v2(void *set, struct fake_event *ev, unsigned int timeout_ms)
{
    (void)timeout_ms;
    if (set != &evset || registered < 2 || xids_left == 0)
        return 10; /* NVML_ERROR_TIMEOUT */
    xids_left--;
    ev->device = &devs[1];
    ev->type = 0x8;
    ev->data = 79; /* XID 79: fallen off the bus */
    return 0;
}
