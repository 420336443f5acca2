/*
 * supnet.c - a job's network boundary on its node (supnet.h, docs/network.md): the
 * namespace, veth pair, nftables table and tbf caps, made and removed with ip, tc and nft.
 * The programs run as children (never a shell), their stderr kept for the error message.
 */
#define _GNU_SOURCE
#include "agent/supnet.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/str.h"

#define SUP_NET_GATEWAY "169.254.1.1"

void sup_net_names(const char *node, uint64_t id, char *ifname, size_t iflen, char *ns,
                   size_t nslen)
{
    snprintf(ifname, iflen, "dk%llu", (unsigned long long)id);
    snprintf(ns, nslen, "docket-%s-%llu", node, (unsigned long long)id);
}

/* ---- the ruleset ---------------------------------------------------------------------- */

static void dest_rule(struct dbuf *b, const struct sup_net_dest *d)
{
    char a[16];
    net_addr_text(d->net, a, sizeof(a));
    if (d->nports == 0) {
        dbuf_printf(b, "\t\tip daddr %s/%d accept\n", a, d->prefix);
        return;
    }
    for (int proto = 0; proto < 2; proto++) {
        dbuf_printf(b, "\t\tip daddr %s/%d %s dport { ", a, d->prefix, proto ? "udp" : "tcp");
        for (int i = 0; i < d->nports; i++)
            dbuf_printf(b, "%s%u", i ? ", " : "", d->ports[i]);
        dbuf_printf(b, " } accept\n");
    }
}

static void peers_set(struct dbuf *b, const struct net_job *j)
{
    if (j->npeers == 0)
        return;
    dbuf_printf(b, "\tset peers {\n\t\ttype ipv4_addr\n\t\telements = { ");
    for (size_t i = 0; i < j->npeers; i++) {
        char a[16];
        net_addr_text(j->peers[i], a, sizeof(a));
        dbuf_printf(b, "%s%s", i ? ", " : "", a);
    }
    dbuf_printf(b, " }\n\t}\n");
}

void sup_net_ruleset(struct dbuf *b, uint64_t id, const struct net_job *j,
                     const struct sup_net_node *node, const struct sup_net_dest *dests,
                     size_t ndests)
{
    char ifname[32], a[16];
    snprintf(ifname, sizeof(ifname), "dk%llu", (unsigned long long)id);
    dbuf_printf(b, "table inet docket_%llu {\n\tcounter refused {\n\t}\n", (unsigned long long)id);
    peers_set(b, j);
    /* only its own address leaves the job: a job that could change it (one allowed to
     * run as root) cannot pass for another job */
    net_addr_text(j->addr, a, sizeof(a));
    dbuf_printf(b, "\tchain egress {\n\t\tip saddr != %s counter name refused drop\n", a);
    dbuf_printf(b, "\t\tct state established,related accept\n");
    if (j->npeers)
        dbuf_printf(b, "\t\tip daddr @peers accept\n");
    if (j->controller && node->ctl_addr) {
        net_addr_text(node->ctl_addr, a, sizeof(a));
        dbuf_printf(b, "\t\tip daddr %s tcp dport %d accept\n", a, node->ctl_port);
    }
    for (int i = 0; i < j->ndns; i++) {
        net_addr_text(j->dns[i], a, sizeof(a));
        dbuf_printf(b, "\t\tip daddr %s udp dport 53 accept\n\t\tip daddr %s tcp dport 53 accept\n",
                    a, a);
    }
    for (size_t i = 0; i < ndests; i++)
        dest_rule(b, &dests[i]);
    /* a refusal answers at once (the job sees "unreachable", not a hang) and is counted */
    dbuf_printf(b, "\t\tcounter name refused reject with icmpx type admin-prohibited\n\t}\n");
    dbuf_printf(b,
                "\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n"
                "\t\tiifname \"%s\" jump egress\n\t}\n",
                ifname);
    dbuf_printf(b,
                "\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n"
                "\t\tiifname \"%s\" jump egress\n\t}\n}\n",
                ifname);
}

/* ---- running the programs --------------------------------------------------------------- */

/* Run argv (from PATH) with `input` on its stdin (NULL: /dev/null); 0 when it exits 0,
 * else -EIO with its first line of stderr in err. Its output (stdout and stderr, at most
 * outlen - 1 bytes) goes to `out` when given. */
static int run_prog_out(char *const argv[], const char *input, char *err, size_t errlen,
                        char *outbuf, size_t outlen)
{
    int in[2] = {-1, -1}, out[2];
    if ((input && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(input ? in[0] : devnull, 0);
        dup2(out[1], 1);
        dup2(out[1], 2);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    if (input) {
        close(in[0]);
        size_t len = strlen(input), off = 0;
        while (off < len) {
            ssize_t w = write(in[1], input + off, len - off);
            if (w <= 0 && errno != EINTR)
                break;
            off += w > 0 ? (size_t)w : 0;
        }
        close(in[1]);
    }
    char buf[1024];
    size_t n = 0;
    ssize_t r;
    while ((r = read(out[0], buf + n, sizeof(buf) - 1 - n)) > 0 || (r < 0 && errno == EINTR))
        n += r > 0 ? (size_t)r : 0;
    close(out[0]);
    buf[n] = '\0';
    if (outbuf)
        str_copy(outbuf, outlen, buf);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    if (err)
        snprintf(err, errlen, "%s: %s", argv[0], buf[0] ? buf : "failed");
    return -EIO;
}

static int run_prog(char *const argv[], const char *input, char *err, size_t errlen)
{
    return run_prog_out(argv, input, err, errlen, NULL, 0);
}

#define RUN(err, errlen, ...) run_prog((char *const[]){__VA_ARGS__, NULL}, NULL, err, errlen)

bool sup_net_can_enforce(const char *nft, char *why, size_t len)
{
    if (geteuid() != 0) {
        snprintf(why, len, "network policy needs docket-node to run as root");
        return false;
    }
    if (!nft || !nft[0] || access(nft, X_OK) < 0) {
        snprintf(why, len, "network policy cannot be enforced: nftables (%s) is not installed",
                 nft && nft[0] ? nft : "nft");
        return false;
    }
    char tmp[256];
    if (RUN(tmp, sizeof(tmp), (char *)nft, "list", "tables") < 0) {
        snprintf(why, len, "network policy cannot be enforced: %s", tmp);
        return false;
    }
    return true;
}

/* ---- destinations ---------------------------------------------------------------------- */

static bool dest_add(struct sup_net_dest **d, size_t *n, size_t *cap, struct sup_net_dest one)
{
    if (*n == *cap) {
        size_t more = *cap ? *cap * 2 : 16;
        struct sup_net_dest *p = realloc(*d, more * sizeof(**d));
        if (!p)
            return false;
        *d = p;
        *cap = more;
    }
    (*d)[(*n)++] = one;
    return true;
}

/* Each allow entry as networks: a CIDR as it is, a host name as each address it resolves
 * to now (/32). A name that does not resolve is an error: the job would otherwise start
 * without a destination it was promised. */
static int resolve_dests(const struct net_job *j, struct sup_net_dest **out, size_t *n, char *err,
                         size_t errlen)
{
    struct sup_net_dest *d = NULL;
    size_t cap = 0;
    bool ok = true;
    *n = 0;
    for (int i = 0; ok && i < j->nallow; i++) {
        const struct net_allow *a = &j->allow[i];
        struct sup_net_dest one = {0, 0, a->ports, a->nports};
        if (net_cidr_parse(a->to, &one.net, &one.prefix)) {
            ok = dest_add(&d, n, &cap, one);
            continue;
        }
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
        if (getaddrinfo(a->to, NULL, &hints, &res) != 0 || !res) {
            snprintf(err, errlen, "cannot resolve allowed host '%s'", a->to);
            free(d);
            return -ENOENT;
        }
        for (struct addrinfo *r = res; ok && r; r = r->ai_next) {
            one.net = ntohl(((struct sockaddr_in *)r->ai_addr)->sin_addr.s_addr);
            one.prefix = 32;
            ok = dest_add(&d, n, &cap, one);
        }
        freeaddrinfo(res);
    }
    if (!ok) {
        free(d);
        return -ENOMEM;
    }
    *out = d;
    return 0;
}

/* ---- set-up and removal ----------------------------------------------------------------- */

static int forwarding_on(char *err, size_t errlen)
{
    char v = '0';
    int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, 1) != 1)
            v = '0';
        close(fd);
    }
    if (v == '1')
        return 0;
    snprintf(err, errlen,
             "net.ipv4.ip_forward is off on this node: a job's traffic cannot "
             "leave it (docs/network.md)");
    return -EHOSTUNREACH;
}

static int link_up(const char *ns, const char *ifname, uint32_t addr, char *err, size_t errlen)
{
    char a[24];
    net_addr_text(addr, a, sizeof(a));
    strcat(a, "/32");
    char host[24];
    net_addr_text(addr, host, sizeof(host));
    strcat(host, "/32");
    int rc;
    if ((rc = RUN(err, errlen, "ip", "addr", "add", SUP_NET_GATEWAY "/32", "dev", (char *)ifname)) <
            0 ||
        (rc = RUN(err, errlen, "ip", "link", "set", (char *)ifname, "up")) < 0 ||
        (rc = RUN(err, errlen, "ip", "route", "add", host, "dev", (char *)ifname)) < 0 ||
        (rc = RUN(err, errlen, "ip", "-n", (char *)ns, "link", "set", "lo", "up")) < 0 ||
        (rc = RUN(err, errlen, "ip", "-n", (char *)ns, "addr", "add", a, "dev", "eth0")) < 0 ||
        (rc = RUN(err, errlen, "ip", "-n", (char *)ns, "link", "set", "eth0", "up")) < 0 ||
        (rc = RUN(err, errlen, "ip", "-n", (char *)ns, "route", "add", SUP_NET_GATEWAY, "dev",
                  "eth0", "scope", "link")) < 0)
        return rc;
    return RUN(err, errlen, "ip", "-n", (char *)ns, "route", "add", "default", "via",
               SUP_NET_GATEWAY, "dev", "eth0");
}

/* tbf on both ends: the node's end shapes what the job receives, the job's end what it
 * sends (the job holds no CAP_NET_ADMIN there to lift it). */
static int cap_rate(const char *ns, const char *ifname, int64_t mbit, char *err, size_t errlen)
{
    char rate[32], burst[32];
    snprintf(rate, sizeof(rate), "%lldmbit", (long long)mbit);
    /* a burst of 10 ms at the rate, at least 32 KiB, so the rate holds at any size */
    int64_t bytes = mbit * 1000000 / 8 / 100;
    snprintf(burst, sizeof(burst), "%lld", (long long)(bytes > 32768 ? bytes : 32768));
    int rc = RUN(err, errlen, "tc", "qdisc", "add", "dev", (char *)ifname, "root", "tbf", "rate",
                 rate, "burst", burst, "latency", "50ms");
    if (rc == 0)
        rc = RUN(err, errlen, "tc", "-n", (char *)ns, "qdisc", "add", "dev", "eth0", "root", "tbf",
                 "rate", rate, "burst", burst, "latency", "50ms");
    return rc;
}

int sup_net_setup(const char *node_name, uint64_t id, const struct net_job *j,
                  const struct sup_net_node *node, char *err, size_t errlen)
{
    char ifname[32], ns[160], step[256] = "";
    sup_net_names(node_name, id, ifname, sizeof(ifname), ns, sizeof(ns));
    if (!sup_net_can_enforce(node->nft, err, errlen))
        return -ENOTSUP;
    int rc = forwarding_on(err, errlen);
    if (rc < 0)
        return rc;
    sup_net_remove(node_name, id, node->nft, NULL, 0); /* an earlier run's, if any */
    struct sup_net_dest *dests = NULL;
    size_t ndests = 0;
    if ((rc = resolve_dests(j, &dests, &ndests, err, errlen)) < 0)
        return rc;
    struct dbuf rules;
    dbuf_init(&rules, 4 << 20);
    sup_net_ruleset(&rules, id, j, node, dests, ndests);
    free(dests);
    if ((rc = RUN(step, sizeof(step), "ip", "netns", "add", ns)) < 0 ||
        (rc = RUN(step, sizeof(step), "ip", "link", "add", ifname, "type", "veth", "peer", "name",
                  "eth0", "netns", ns)) < 0 ||
        (rc = link_up(ns, ifname, j->addr, step, sizeof(step))) < 0 ||
        (rc = rules.failed ? -ENOMEM
                           : run_prog((char *const[]){(char *)node->nft, "-f", "-", NULL},
                                      rules.data, step, sizeof(step))) < 0 ||
        (j->rate_mbit > 0 && (rc = cap_rate(ns, ifname, j->rate_mbit, step, sizeof(step))) < 0))
        snprintf(err, errlen, "cannot set up the job's network: %s", step);
    dbuf_release(&rules);
    if (rc < 0)
        sup_net_remove(node_name, id, node->nft, NULL, 0);
    return rc;
}

int sup_net_remove(const char *node_name, uint64_t id, const char *nft, char *err, size_t errlen)
{
    char ifname[32], ns[160], table[48], path[200];
    sup_net_names(node_name, id, ifname, sizeof(ifname), ns, sizeof(ns));
    snprintf(table, sizeof(table), "docket_%llu", (unsigned long long)id);
    /* each part is removed when it is there; what is still there afterwards is the error */
    if (nft && nft[0] && access(nft, X_OK) == 0 &&
        RUN(NULL, 0, (char *)nft, "list", "table", "inet", table) == 0 &&
        RUN(err, errlen, (char *)nft, "delete", "table", "inet", table) < 0)
        return -EBUSY;
    /* asked over netlink, not /sys: sysfs shows the namespace it was mounted in */
    if (RUN(NULL, 0, "ip", "link", "show", "dev", ifname) == 0 &&
        RUN(err, errlen, "ip", "link", "del", ifname) < 0)
        return -EBUSY;
    snprintf(path, sizeof(path), "/run/netns/%s", ns);
    if (access(path, F_OK) == 0 && RUN(err, errlen, "ip", "netns", "del", ns) < 0)
        return -EBUSY;
    return 0;
}

int64_t sup_net_refused(uint64_t id, const char *nft)
{
    char table[48], out[1024];
    snprintf(table, sizeof(table), "docket_%llu", (unsigned long long)id);
    if (!nft || !nft[0] ||
        run_prog_out(
            (char *const[]){(char *)nft, "list", "counter", "inet", table, "refused", NULL}, NULL,
            NULL, 0, out, sizeof(out)) < 0)
        return -1;
    const char *p = strstr(out, "packets ");
    return p ? strtoll(p + 8, NULL, 10) : -1;
}
