/*
 * inventory.h - what this machine has: CPUs and memory (from the kernel), GPUs found
 * through NVML loaded at run time with dlopen (no build dependency), or GPUs declared on
 * the command line ("8xH100-80GB") when NVML is absent.
 *
 * Ownership: struct inventory is a value; inventory_release frees the NVML handle.
 * Errors: 0 or negative errno with a message in `err`.
 */
#ifndef DOCKET_AGENT_INVENTORY_H
#define DOCKET_AGENT_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { INV_MAX_GPUS = 64 };

struct inv_gpu {
    int index;
    int minor;     /* /dev/nvidiaN's N (NVML's minor number; the index when declared) */
    char name[96]; /* "NVIDIA H100 80GB HBM3", or the declared type */
    char uuid[96]; /* "GPU-..." or "" for declared GPUs */
    int64_t mem_mb;
    int util;            /* percent, last sample (NVML, or declared: -1 = none) */
    int64_t mem_used_mb; /* NVML only */
    /* NVML only, -1 = unknown: power (mW), temperature (C), volatile uncorrected ECC
     * errors, XID events counted since the agent started */
    int64_t power_mw;
    int temp_c;
    int64_t ecc_errors, xid_errors;
};

struct nvml; /* the dlopen'd library, opaque */

struct inventory {
    int cpus;
    int64_t mem_mb;
    char gpu_type[64]; /* the one type reported to the controller */
    int ngpus;
    struct inv_gpu gpus[INV_MAX_GPUS];
    bool from_nvml;
    struct nvml *nvml; /* owned; NULL when declared */
};

/* CPUs online to this process (sched_getaffinity) and MemTotal from `meminfo_path`
 * (NULL = /proc/meminfo). */
int inventory_host(struct inventory *inv, const char *meminfo_path, char *err, size_t errlen);
/* Parse "MemTotal:  16314192 kB" style text; MiB or -EINVAL. */
int64_t inventory_parse_meminfo(const char *text);

/* Load NVML from `lib` (NULL = $DOCKET_NVML_LIB or "libnvidia-ml.so.1") and list its
 * GPUs. -ENOENT when the library is absent (the caller falls back to declared GPUs). */
int inventory_nvml(struct inventory *inv, const char *lib, char *err, size_t errlen);
/* Refresh utilisation and memory used of every NVML GPU (no-op when declared). */
int inventory_nvml_sample(struct inventory *inv);
/* Declared GPUs: their utilisation as the operator declares it (docs/monitoring.md):
 * the file `path` holds one integer 0..100 for every GPU of the node, read at each
 * sample; no file, or anything else in it, is -1 (no utilisation: "declared GPUs report
 * none"). This declares a resource of a machine without NVIDIA hardware, so the idle
 * rules can be exercised there. Returns the value set (no-op with NVML). */
int inventory_declared_util(struct inventory *inv, const char *path);
/* A type name for the controller from an NVML name: "NVIDIA H100 80GB HBM3" ->
 * "H100-80GB"; unknown shapes keep their words joined by '-'. */
void inventory_type_from_name(const char *name, int64_t mem_mb, char *out, size_t len);

/* Declared GPUs: "8xH100-80GB" (util/parse.h parse_gpu_decl). Memory defaults from the
 * type's "-80GB" suffix when the declaration gives none. */
int inventory_declare(struct inventory *inv, const char *decl, char *err, size_t errlen);

void inventory_release(struct inventory *inv);

#endif
