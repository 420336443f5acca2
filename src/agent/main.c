/*
 * main.c - docket-node's command line: flags and the optional YAML config (--config),
 * validated whole before anything starts (flags win over the file), then the inventory
 * and the agent loop. See docs/agent.md for every option.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/cgroup.h"
#include "protocol/network.h"
#include "util/fingerprint.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/yamljson.h"

static const char usage_text[] =
    "usage: docket-node --controller https://HOST:PORT (--join-token TOKEN | --join-token-file "
    "FILE)\n"
    "                   [options]\n"
    "\n"
    "Runs the jobs the controller (docketd) sends to this machine, each under its own\n"
    "supervisor and cgroup, and reports what happens to them.\n"
    "\n"
    "  --controller URL        the controller, https://HOST:PORT (http:// only on loopback);\n"
    "                          URL1,URL2: an active/standby pair, tried in turn\n"
    "  --controller-fingerprint PIN\n"
    "                          the controller's key, sha256:<hex>, as `docket token join`\n"
    "                          prints it (or $DOCKET_CONTROLLER_FINGERPRINT); a controller\n"
    "                          with another key is refused\n"
    "  --controller-fingerprint-file FILE  read it from FILE\n"
    "  --controller-ca FILE    else check the controller's certificate against this CA\n"
    "                          (default: the system's CAs)\n"
    "  --join-token TOKEN      a join token (dkj_...) for the first registration; prefer\n"
    "                          --join-token-file or $DOCKET_JOIN_TOKEN (the value given\n"
    "                          here is blanked from the command line at once)\n"
    "  --join-token-file FILE  read the join token from FILE\n"
    "  --name NAME             this node's name (default: the host name)\n"
    "  --addr ADDR             address other nodes reach this one at (default: NAME)\n"
    "  --gpus DECL             declared GPUs, e.g. 8xH100-80GB, when NVML is absent or to\n"
    "                          override it; 0 for none\n"
    "  --cpus N                CPUs to offer (default: the CPUs this process may use)\n"
    "  --mem SIZE              memory to offer, e.g. 64G (default: MemTotal)\n"
    "  --label KEY=VALUE       a node label (repeatable)\n"
    "  --state-dir DIR         jobs, logs, credential (default /var/lib/docket-node)\n"
    "  --scratch-root DIR      per-job scratch directories (default STATE_DIR/scratch)\n"
    "  --session-root DIR      interactive sessions' working directories, DIR/PROJECT/USER\n"
    "                          (default STATE_DIR/sessions; docs/interactive.md)\n"
    "  --slurm-cli PATH        the docket CLI that Slurm-style jobs find as srun, sbatch,\n"
    "                          squeue, scancel, scontrol (default: docket beside this program)\n"
    "  --keep-scratch          keep scratch directories after jobs end\n"
    "  --cgroup-root PATH      cgroup mount root (default /sys/fs/cgroup; v2 or v1)\n"
    "  --no-cgroups            track jobs by session only (non-root development)\n"
    "  --no-spare              (cgroup v1) make each job's supervisor when the job comes,\n"
    "                          not in advance (slower launches)\n"
    "  --allow-root-jobs       allow jobs to run as root\n"
    "  --health-check PATH     run PATH periodically; non-zero exit marks the node UNHEALTHY\n"
    "  --health-interval DUR   how often (default 30s)\n"
    "  --job-net CIDR          this node's range of job addresses (e.g. 10.200.1.0/24):\n"
    "                          jobs under a network policy get one each (docs/network.md)\n"
    "  --nft PATH              the nft program that enforces it (default /usr/sbin/nft)\n"
    "  --usage-interval DUR    how often to sample and report job usage (default 10s,\n"
    "                          at most 10m)\n"
    "  --declared-gpu-util-file PATH\n"
    "                          declared GPUs (--gpus): a file holding their utilisation,\n"
    "                          0..100, read at each sample (default: none reported)\n"
    "  --log-interval DUR      how often to look for new job output (default 100ms)\n"
    "  --limit-slack DUR       the local time limit trails the controller's (default 1s)\n"
    "  --fence-margin DUR      jobs are stopped once the controller has not been heard\n"
    "                          from for its node_timeout minus this (default 10s, at most\n"
    "                          a third of node_timeout)\n"
    "  --log-limit SIZE        output shipped per job, stream and run, and kept on this\n"
    "                          node's disk in a job's default output files; the rest is\n"
    "                          cut with a marker line (default 1G)\n"
    "  --job-pids-max N        processes and threads per job, 0 for no limit (default 8192)\n"
    "  --service-ports LO-HI   the ports service replicas get here ($PORT, docs/services.md;\n"
    "                          default: none, a replica then gets no port)\n"
    "  --node-pids-reserve N   processes and threads kept for the agent and the system:\n"
    "                          all jobs together get at most pid_max minus this (default\n"
    "                          4096); 0 for no node-wide limit\n"
    "  --job-mem-default SIZE  memory limit of a job that asks for none (default: the\n"
    "                          memory offered, --mem or MemTotal); 0 for none\n"
    "  --max-queued-events N   events kept while the controller is away; past it the\n"
    "                          oldest usage samples are dropped (default 10000)\n"
    "  --oci-runtime RUNTIME   the OCI runtime of jobs with an image: crun (default) or\n"
    "                          the path of a crun (docs/environments.md \"Containers\")\n"
    "  --image-cache-max SIZE  the unpacked images kept in STATE_DIR/images, least recently\n"
    "                          used removed first, never one in use (default 20G; 0: no cap)\n"
    "  --gpu-dev-dir DIR       where the GPUs' device nodes nvidiaN are, for containers\n"
    "                          (default /dev)\n"
    "  --log-level LEVEL       debug, info, warn, error (default info)\n"
    "  --log-file PATH         log here instead of stderr\n"
    "  --config FILE           YAML with the same keys (controller, join_token, name, gpus,\n"
    "                          labels: {k: v}, state_dir, health_check, ...); flags win\n"
    "  --help                  this text\n";

/* The docket CLI installed beside docket-node, when there is one ("" otherwise). */
static void default_slurm_cli(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return;
    *slash = '\0';
    if (snprintf(out, len, "%s/docket", self) >= (int)len || access(out, X_OK) < 0)
        out[0] = '\0';
}

enum opt {
    O_CONTROLLER = 256,
    O_JOIN,
    O_JOIN_FILE,
    O_FPR,
    O_FPR_FILE,
    O_CA,
    O_NAME,
    O_ADDR,
    O_GPUS,
    O_CPUS,
    O_MEM,
    O_LABEL,
    O_STATE,
    O_SCRATCH,
    O_SESSION_ROOT,
    O_SLURM_CLI,
    O_KEEP,
    O_CGROOT,
    O_NOCG,
    O_NOSPARE,
    O_ROOTJOBS,
    O_HEALTH,
    O_HEALTH_INT,
    O_JOBNET,
    O_NFT,
    O_USAGE_INT,
    O_DECL_UTIL,
    O_LOG_INT,
    O_SLACK,
    O_FENCE,
    O_LOGLIMIT,
    O_PIDS,
    O_SVCPORTS,
    O_PIDRES,
    O_MEMDEF,
    O_MAXEV,
    O_OCI,
    O_IMGMAX,
    O_GPUDEV,
    O_LOGLEVEL,
    O_LOGFILE,
    O_CONFIG,
    O_HELP,
};

static const struct option longopts[] = {
    {"controller", 1, NULL, O_CONTROLLER},
    {"join-token", 1, NULL, O_JOIN},
    {"join-token-file", 1, NULL, O_JOIN_FILE},
    {"controller-fingerprint", 1, NULL, O_FPR},
    {"controller-fingerprint-file", 1, NULL, O_FPR_FILE},
    {"controller-ca", 1, NULL, O_CA},
    {"name", 1, NULL, O_NAME},
    {"addr", 1, NULL, O_ADDR},
    {"gpus", 1, NULL, O_GPUS},
    {"cpus", 1, NULL, O_CPUS},
    {"mem", 1, NULL, O_MEM},
    {"label", 1, NULL, O_LABEL},
    {"state-dir", 1, NULL, O_STATE},
    {"scratch-root", 1, NULL, O_SCRATCH},
    {"session-root", 1, NULL, O_SESSION_ROOT},
    {"slurm-cli", 1, NULL, O_SLURM_CLI},
    {"keep-scratch", 0, NULL, O_KEEP},
    {"cgroup-root", 1, NULL, O_CGROOT},
    {"no-cgroups", 0, NULL, O_NOCG},
    {"no-spare", 0, NULL, O_NOSPARE},
    {"allow-root-jobs", 0, NULL, O_ROOTJOBS},
    {"health-check", 1, NULL, O_HEALTH},
    {"health-interval", 1, NULL, O_HEALTH_INT},
    {"job-net", 1, NULL, O_JOBNET},
    {"nft", 1, NULL, O_NFT},
    {"usage-interval", 1, NULL, O_USAGE_INT},
    {"declared-gpu-util-file", 1, NULL, O_DECL_UTIL},
    {"log-interval", 1, NULL, O_LOG_INT},
    {"limit-slack", 1, NULL, O_SLACK},
    {"fence-margin", 1, NULL, O_FENCE},
    {"log-limit", 1, NULL, O_LOGLIMIT},
    {"job-pids-max", 1, NULL, O_PIDS},
    {"service-ports", 1, NULL, O_SVCPORTS},
    {"node-pids-reserve", 1, NULL, O_PIDRES},
    {"job-mem-default", 1, NULL, O_MEMDEF},
    {"max-queued-events", 1, NULL, O_MAXEV},
    {"oci-runtime", 1, NULL, O_OCI},
    {"image-cache-max", 1, NULL, O_IMGMAX},
    {"gpu-dev-dir", 1, NULL, O_GPUDEV},
    {"log-level", 1, NULL, O_LOGLEVEL},
    {"log-file", 1, NULL, O_LOGFILE},
    {"config", 1, NULL, O_CONFIG},
    {"help", 0, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

/* Settings as strings, from the file then the flags; validated once at the end. */
struct settings {
    const char *v[O_HELP + 1];
    json_t *labels;
    json_t *doc;
};

static const char *yaml_key(int o)
{
    for (const struct option *p = longopts; p->name; p++)
        if (p->val == o)
            return p->name;
    return "";
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "docket-node: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int add_label(json_t *labels, const char *kv)
{
    char k[64], v[64];
    if (parse_label(kv, k, sizeof k, v, sizeof v) < 0)
        return -EINVAL;
    json_object_set_new(labels, k, json_string(v));
    return 0;
}

/* Keys of the config file are the long flag names with '_' or '-'. */
static int load_config(struct settings *s, const char *path)
{
    char err[256];
    s->doc = yaml_file_to_json(path, err, sizeof err);
    if (!s->doc)
        return die("config '%s': %s", path, err);
    if (!json_is_object(s->doc))
        return die("config '%s': the document must be a mapping", path);
    const char *key;
    json_t *val;
    json_object_foreach(s->doc, key, val) {
        char flag[64];
        str_copy(flag, sizeof flag, key);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        if (strcmp(flag, "labels") == 0)
            str_copy(flag, sizeof flag, "label");
        const struct option *o = longopts;
        while (o->name && strcmp(o->name, flag) != 0)
            o++;
        if (!o->name || o->val == O_CONFIG || o->val == O_HELP)
            return die("config '%s': unknown key '%s'", path, key);
        if (o->val == O_LABEL) {
            if (!json_is_object(val))
                return die("config '%s': '%s' must be a mapping of strings", path, key);
            const char *lk;
            json_t *lv;
            json_object_foreach(val, lk, lv) {
                char kv[160];
                snprintf(kv, sizeof kv, "%s=%s", lk,
                         json_is_string(lv) ? json_string_value(lv) : "");
                if (!json_is_string(lv) || add_label(s->labels, kv) < 0)
                    return die("config: bad label '%s' in '%s'", lk, path);
            }
            continue;
        }
        if (!o->has_arg) {
            if (!json_is_boolean(val))
                return die("config '%s': '%s' must be true or false", path, key);
            s->v[o->val] = json_is_true(val) ? "true" : NULL;
            continue;
        }
        if (json_is_integer(val)) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(val));
            json_object_set_new(s->doc, key, json_string(num));
            val = json_object_get(s->doc, key);
        }
        if (!json_is_string(val))
            return die("config '%s': '%s' must be a string", path, key);
        s->v[o->val] = json_string_value(val);
    }
    return 0;
}

static int read_token_file(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return die("cannot read file '%s': %s", path, strerror(errno));
    char buf[512] = "";
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    char *t = str_trim(buf);
    if (!*t || str_copy(out, len, t) < 0)
        return die("file '%s' is empty or its first line too long", path);
    return 0;
}

static int duration(const char *v, const char *flag, int64_t def, int64_t min, int64_t *out)
{
    if (!v) {
        *out = def;
        return 0;
    }
    if (parse_duration_ms(v, out) < 0 || *out < min)
        return die("bad duration '%s' for --%s", v, flag);
    return 0;
}

static int build_config(struct settings *s, struct agent_config *c)
{
    const char *const *v = s->v;
    char err[256];
    int rc;
    if (!v[O_CONTROLLER])
        return die("--controller is required");
    if (str_copy(c->controller, sizeof c->controller, v[O_CONTROLLER]) < 0)
        return die("--controller '%s' is too long", v[O_CONTROLLER]);
    if (v[O_JOIN] && str_copy(c->join_token, sizeof c->join_token, v[O_JOIN]) < 0)
        return die("--join-token %s", "is too long");
    if (v[O_JOIN_FILE] &&
        (rc = read_token_file(v[O_JOIN_FILE], c->join_token, sizeof c->join_token)) != 0)
        return rc;
    const char *envtok = getenv("DOCKET_JOIN_TOKEN");
    if (!c->join_token[0] && envtok && *envtok &&
        str_copy(c->join_token, sizeof c->join_token, envtok) < 0)
        return die("$DOCKET_JOIN_TOKEN %s", "is too long");
    if (v[O_FPR] &&
        str_copy(c->controller_fingerprint, sizeof c->controller_fingerprint, v[O_FPR]) < 0)
        return die("--controller-fingerprint %s", "is too long");
    if (v[O_FPR_FILE] && (rc = read_token_file(v[O_FPR_FILE], c->controller_fingerprint,
                                               sizeof c->controller_fingerprint)) != 0)
        return rc;
    const char *envfpr = getenv("DOCKET_CONTROLLER_FINGERPRINT");
    if (!c->controller_fingerprint[0] && envfpr && *envfpr &&
        str_copy(c->controller_fingerprint, sizeof c->controller_fingerprint, envfpr) < 0)
        return die("$DOCKET_CONTROLLER_FINGERPRINT %s", "is too long");
    unsigned char pin[FPR_LEN];
    if (c->controller_fingerprint[0] && fpr_parse(c->controller_fingerprint, pin) < 0)
        return die("bad controller fingerprint '%s' (want sha256:<64 hex digits>, as `docket "
                   "token join` prints it)",
                   c->controller_fingerprint);
    if (v[O_CA] && str_copy(c->controller_ca, sizeof c->controller_ca, v[O_CA]) < 0)
        return die("--controller-ca %s", "is too long");
    if (v[O_CA] && access(v[O_CA], R_OK) < 0)
        return die("cannot read --controller-ca '%s': %s", v[O_CA], strerror(errno));
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    const char *name = v[O_NAME] ? v[O_NAME] : host;
    if (!str_is_name(name) || str_copy(c->name, sizeof c->name, name) < 0)
        return die("bad node name '%s' (1..63 of A-Z a-z 0-9 . _ -)", name);
    str_copy(c->addr, sizeof c->addr, v[O_ADDR] ? v[O_ADDR] : c->name);
    str_copy(c->state_dir, sizeof c->state_dir, v[O_STATE] ? v[O_STATE] : "/var/lib/docket-node");
    if (v[O_SCRATCH])
        str_copy(c->scratch_root, sizeof c->scratch_root, v[O_SCRATCH]);
    if (v[O_SESSION_ROOT] &&
        (v[O_SESSION_ROOT][0] != '/' ||
         str_copy(c->session_root, sizeof c->session_root, v[O_SESSION_ROOT]) < 0))
        return die("--session-root '%s' must be an absolute path", v[O_SESSION_ROOT]);
    if (v[O_SLURM_CLI]) {
        if (access(v[O_SLURM_CLI], X_OK) < 0)
            return die("--slurm-cli '%s' is not executable: %s", v[O_SLURM_CLI], strerror(errno));
        str_copy(c->slurm_cli, sizeof c->slurm_cli, v[O_SLURM_CLI]);
    } else {
        default_slurm_cli(c->slurm_cli, sizeof c->slurm_cli);
    }
    if (v[O_CGROOT])
        str_copy(c->cgroup_root, sizeof c->cgroup_root, v[O_CGROOT]);
    c->no_cgroups = v[O_NOCG] != NULL;
    c->no_spare = v[O_NOSPARE] != NULL;
    c->allow_root_jobs = v[O_ROOTJOBS] != NULL;
    c->keep_scratch = v[O_KEEP] != NULL;
    if (v[O_HEALTH]) {
        if (access(v[O_HEALTH], X_OK) < 0)
            return die("health check '%s' is not executable: %s", v[O_HEALTH], strerror(errno));
        str_copy(c->health_check, sizeof c->health_check, v[O_HEALTH]);
    }
    uint32_t jn_net;
    int jn_prefix;
    if (v[O_JOBNET] &&
        (!net_cidr_parse(v[O_JOBNET], &jn_net, &jn_prefix) || jn_prefix < 16 || jn_prefix > 29))
        return die("bad --job-net '%s' (a CIDR from /16 to /29, e.g. 10.200.1.0/24)", v[O_JOBNET]);
    str_copy(c->job_net, sizeof c->job_net, v[O_JOBNET] ? v[O_JOBNET] : "");
    str_copy(c->nft, sizeof c->nft, v[O_NFT] ? v[O_NFT] : "/usr/sbin/nft");
    if ((rc = duration(v[O_HEALTH_INT], "health-interval", 30000, 100, &c->health_interval_ms)) ||
        (rc = duration(v[O_USAGE_INT], "usage-interval", 10000, 100, &c->usage_interval_ms)) ||
        (rc = duration(v[O_LOG_INT], "log-interval", 100, 10, &c->log_interval_ms)) ||
        (rc = duration(v[O_SLACK], "limit-slack", 1000, 0, &c->limit_slack_ms)) ||
        (rc = duration(v[O_FENCE], "fence-margin", 10000, 100, &c->fence_margin_ms)))
        return rc;
    if (c->usage_interval_ms > 600000)
        return die("bad --usage-interval '%s' (at most 10m)", v[O_USAGE_INT]);
    if (v[O_DECL_UTIL] && !v[O_GPUS])
        return die("--declared-gpu-util-file %s", "needs declared GPUs (--gpus)");
    if (v[O_DECL_UTIL] &&
        str_copy(c->declared_gpu_util_file, sizeof c->declared_gpu_util_file, v[O_DECL_UTIL]) < 0)
        return die("--declared-gpu-util-file %s", "is too long");
    int64_t mb = 1024;
    if (v[O_LOGLIMIT] && (parse_size_mb(v[O_LOGLIMIT], &mb) < 0 || mb <= 0))
        return die("bad --log-limit '%s' (e.g. 512M)", v[O_LOGLIMIT]);
    c->log_limit_bytes = mb * 1024 * 1024;
    int64_t img_mb = 20 * 1024;
    if (v[O_IMGMAX] && (parse_size_mb(v[O_IMGMAX], &img_mb) < 0 || img_mb < 0))
        return die("bad --image-cache-max '%s' (e.g. 50G, 0 for no cap)", v[O_IMGMAX]);
    c->image_cache_max_bytes = img_mb * 1024 * 1024;
    if ((v[O_OCI] && str_copy(c->oci_runtime, sizeof c->oci_runtime, v[O_OCI]) < 0) ||
        (v[O_GPUDEV] && str_copy(c->gpu_dev_dir, sizeof c->gpu_dev_dir, v[O_GPUDEV]) < 0))
        return die("--oci-runtime or --gpu-dev-dir %s", "is too long");
    /* runc manages the container's cgroup itself: in the job's own group it freezes the
     * group it runs in (and removes it at the end), so it cannot keep the job's limits */
    const char *rt = strrchr(c->oci_runtime, '/');
    if (strcmp(rt ? rt + 1 : c->oci_runtime, "runc") == 0)
        return die("--oci-runtime %s: runc cannot run a container inside the job's own cgroup; "
                   "use crun",
                   c->oci_runtime);
    c->pids_max = 8192;
    if (v[O_PIDS] && parse_int64(v[O_PIDS], 0, INT32_MAX, &c->pids_max) < 0)
        return die("bad --job-pids-max '%s' (a number, 0 for no limit)", v[O_PIDS]);
    if (v[O_SVCPORTS] &&
        (sscanf(v[O_SVCPORTS], "%d-%d", &c->service_port_lo, &c->service_port_hi) != 2 ||
         c->service_port_lo < 1024 || c->service_port_hi > 65535 ||
         c->service_port_lo > c->service_port_hi))
        return die("bad --service-ports '%s' (LO-HI, 1024..65535)", v[O_SVCPORTS]);
    int64_t reserve = 4096, pid_max = cg_pid_max();
    if (v[O_PIDRES] && parse_int64(v[O_PIDRES], 0, INT32_MAX, &reserve) < 0)
        return die("bad --node-pids-reserve '%s' (a number, 0 for no node-wide limit)",
                   v[O_PIDRES]);
    c->node_pids_max = cg_node_pids_cap(pid_max, reserve);
    if (c->node_pids_max < 0)
        return die("bad --node-pids-reserve '%s': it must be below this machine's pid_max (%lld)",
                   v[O_PIDRES] ? v[O_PIDRES] : "4096", (long long)pid_max);
    int64_t maxev = 10000;
    if (v[O_MAXEV] && parse_int64(v[O_MAXEV], 10, 100000000, &maxev) < 0)
        return die("bad --max-queued-events '%s' (at least 10)", v[O_MAXEV]);
    c->max_queued_events = (size_t)maxev;
    if (inventory_host(&c->inv, NULL, err, sizeof err) < 0)
        return die("%s", err);
    if (v[O_CPUS] && parse_int(v[O_CPUS], 1, 1 << 20, &c->inv.cpus) < 0)
        return die("bad --cpus '%s' (a positive integer)", v[O_CPUS]);
    if (v[O_MEM] && (parse_size_mb(v[O_MEM], &c->inv.mem_mb) < 0 || c->inv.mem_mb <= 0))
        return die("bad --mem '%s' (e.g. 64G)", v[O_MEM]);
    if (v[O_GPUS]) {
        if (inventory_declare(&c->inv, v[O_GPUS], err, sizeof err) < 0)
            return die("%s", err);
    } else if (inventory_nvml(&c->inv, NULL, err, sizeof err) < 0) {
        log_info("no_nvml", "message=\"%s\" gpus=0", err);
    }
    c->job_mem_default_mb = c->inv.mem_mb;
    if (v[O_MEMDEF] && parse_size_mb(v[O_MEMDEF], &c->job_mem_default_mb) < 0)
        return die("bad --job-mem-default '%s' (e.g. 16G, 0 for none)", v[O_MEMDEF]);
    c->labels = s->labels;
    return 0;
}

/* A token given on the command line is readable by everyone in /proc/PID/cmdline, ours
 * and that of every supervisor (a fork of us): blank it in place before anything else.
 * getopt reads argv[] afterwards, so those slots point at private copies instead. */
static char *argv_copies[8];

static void scrub_secrets(int argc, char **argv)
{
    size_t ncopies = 0;
    for (int i = 1; i < argc && ncopies < sizeof argv_copies / sizeof argv_copies[0]; i++) {
        int slot = -1;
        char *val = NULL;
        if (strcmp(argv[i], "--join-token") == 0 && i + 1 < argc) {
            slot = i + 1;
            val = argv[i + 1];
        } else if (str_has_prefix(argv[i], "--join-token=")) {
            slot = i;
            val = argv[i] + strlen("--join-token=");
        }
        if (slot < 0 || !*val)
            continue;
        char *copy = strdup(argv[slot]);
        if (!copy)
            continue;
        memset(val, 'x', strlen(val));
        argv[slot] = argv_copies[ncopies++] = copy;
    }
}

static int run(int argc, char **argv, struct settings *sp)
{
    struct settings s = *sp;
    const char *labels_from_flags[64];
    int nlabels = 0, c, rc = 0;
    /* first pass: only --config and --help, so flags can override the file */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            rc = load_config(&s, argv[i + 1]);
        else if (str_has_prefix(argv[i], "--config="))
            rc = load_config(&s, argv[i] + 9);
        sp->doc = s.doc;
        if (rc != 0)
            return rc;
    }
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == '?' || c == 'h') {
            fputs(usage_text, stderr);
            return 2;
        }
        if (c == O_LABEL) {
            if (nlabels == 64)
                return die("too many --label flags");
            labels_from_flags[nlabels++] = optarg;
        } else if (c != O_CONFIG && c != O_HELP) {
            s.v[c] = optarg ? optarg : "true";
        }
        (void)yaml_key;
    }
    if (optind < argc)
        return die("unexpected argument '%s'", argv[optind]);
    for (int i = 0; i < nlabels; i++)
        if (add_label(s.labels, labels_from_flags[i]) < 0)
            return die("bad --label '%s' (want key=value)", labels_from_flags[i]);
    enum log_level lvl = LOG_INFO;
    if (s.v[O_LOGLEVEL] && log_level_parse(s.v[O_LOGLEVEL], &lvl) < 0)
        return die("bad --log-level '%s'", s.v[O_LOGLEVEL]);
    if (log_open(s.v[O_LOGFILE], lvl, LOG_TEXT) < 0)
        return die("cannot open log file '%s'", s.v[O_LOGFILE]);
    struct agent_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if ((rc = build_config(&s, &cfg)) != 0) {
        inventory_release(&cfg.inv);
        return rc;
    }
    char err[512];
    struct agent *a = agent_create(&cfg, err, sizeof err);
    if (!a) {
        inventory_release(&cfg.inv);
        return die("%s", err);
    }
    rc = agent_run(a);
    agent_destroy(a);
    log_close();
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct settings s;
    memset(&s, 0, sizeof s);
    s.labels = json_object();
    scrub_secrets(argc, argv);
    int rc = run(argc, argv, &s);
    for (size_t i = 0; i < sizeof argv_copies / sizeof argv_copies[0]; i++)
        free(argv_copies[i]);
    json_decref(s.labels);
    json_decref(s.doc);
    return rc;
}
