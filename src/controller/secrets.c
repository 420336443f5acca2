/*
 * secrets.c - per-project secrets (docs/security.md "Secrets"): sealed at rest, opened
 * only to launch a job that names them.
 *
 * At rest: AES-256-GCM (OpenSSL EVP), a fresh random 96-bit nonce for every value, and
 * "docket-secret-v1", the project and the name as additional data, so a sealed value
 * moved to another row or project fails to open instead of leaking under another name.
 * The 32-byte key lives in its own file (secrets_key, default STATE_DIR/secrets.key),
 * never in the database: a copy of docket.db alone reveals names, not values. docketd
 * makes the key at its first start (0600) and refuses to start when others may read it.
 *
 * Who: each secret names who may receive it ("allow": "members", "user:NAME",
 * "class:NAME"; none: the project's leads), checked when a job naming it is submitted
 * (authz.c ctl_authz_secret_use).
 *
 * In use: a job names its secrets (spec field "secrets"); the start command carries
 * their values in "secret_env", made when the command is made and held only in memory
 * (and on the agent's link, TLS off loopback). Nothing else ever holds a value: not
 * the job's spec, not API output, events, logs or the audit trail (names only). A value
 * that cannot be opened (the row altered, the key file changed) fails the job's launch
 * with a message that says so, never runs it with garbage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/config.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/loop.h"
#include "controller/secrets.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/xalloc.h"

static const char aad_tag[] = "docket-secret-v1";

/* ------------------------------------------------------------------------------------ */
/* The key file                                                                          */

static void key_path(const struct ctl *c, char *path, size_t len)
{
    if (c->cfg.secrets_key[0])
        str_copy(path, len, c->cfg.secrets_key);
    else
        snprintf(path, len, "%s/secrets.key", c->cfg.state_dir);
}

/* A new key file (0600, refused if the path exists) holding k, on disk before return. */
static int write_key(const char *path, const unsigned char k[CTL_SECRET_KEY_LEN], char *err,
                     size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create the secrets key '%s': %s", path, strerror(errno));
        return -errno;
    }
    ssize_t w = write(fd, k, CTL_SECRET_KEY_LEN);
    int ok = w == (ssize_t)CTL_SECRET_KEY_LEN && fsync(fd) == 0;
    if (close(fd) != 0 || !ok) {
        unlink(path);
        snprintf(err, errlen, "cannot write the secrets key '%s'", path);
        return -EIO;
    }
    return 0;
}

static int new_key(unsigned char k[CTL_SECRET_KEY_LEN], char *err, size_t errlen)
{
    if (RAND_bytes(k, CTL_SECRET_KEY_LEN) == 1)
        return 0;
    snprintf(err, errlen, "no randomness for the secrets key");
    return -EIO;
}

static int make_key(const char *path, char *err, size_t errlen)
{
    unsigned char k[CTL_SECRET_KEY_LEN];
    int rc = new_key(k, err, errlen);
    if (rc == 0)
        rc = write_key(path, k, err, errlen);
    OPENSSL_cleanse(k, sizeof(k));
    if (rc == 0)
        log_info("secrets_key_made", "path=%s", path);
    return rc;
}

/* Read a key file into out, refusing one of the wrong size or that others may read. */
static int read_key(const char *path, unsigned char out[CTL_SECRET_KEY_LEN], char *err,
                    size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot open the secrets key '%s': %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    int rc = 0;
    if (!S_ISREG(st.st_mode) || st.st_size != CTL_SECRET_KEY_LEN) {
        snprintf(err, errlen, "the secrets key '%s' must be a file of exactly %d bytes", path,
                 CTL_SECRET_KEY_LEN);
        rc = -EINVAL;
    } else if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "the secrets key '%s' may be read by others (mode %04o): chmod 600 %s, and "
                 "consider the secrets it guards exposed",
                 path, (unsigned)(st.st_mode & 07777), path);
        rc = -EPERM;
    } else if (read(fd, out, CTL_SECRET_KEY_LEN) != CTL_SECRET_KEY_LEN) {
        snprintf(err, errlen, "cannot read the secrets key '%s'", path);
        rc = -EIO;
    }
    close(fd);
    return rc;
}

int ctl_secrets_start(struct ctl *c, char *err, size_t errlen)
{
    char path[CTL_PATH_MAX + 32];
    key_path(c, path, sizeof(path));
    int rc;
    if (access(path, F_OK) != 0 && (rc = make_key(path, err, errlen)) < 0)
        return rc;
    rc = read_key(path, c->secret_key, err, errlen);
    c->secret_key_loaded = rc == 0;
    return rc;
}

void ctl_secrets_stop(struct ctl *c)
{
    OPENSSL_cleanse(c->secret_key, sizeof(c->secret_key));
    c->secret_key_loaded = false;
}

/* ------------------------------------------------------------------------------------ */
/* Sealing                                                                               */

static int set_aad(EVP_CIPHER_CTX *x, const char *project, const char *name)
{
    int n;
    /* the NULs keep ("ab", "c") and ("a", "bc") apart */
    return EVP_EncryptUpdate(x, NULL, &n, (const unsigned char *)aad_tag, sizeof(aad_tag)) == 1 &&
                   EVP_EncryptUpdate(x, NULL, &n, (const unsigned char *)project,
                                     (int)strlen(project) + 1) == 1 &&
                   EVP_EncryptUpdate(x, NULL, &n, (const unsigned char *)name,
                                     (int)strlen(name) + 1) == 1
               ? 0
               : -EIO;
}

static int set_aad_dec(EVP_CIPHER_CTX *x, const char *project, const char *name)
{
    int n;
    return EVP_DecryptUpdate(x, NULL, &n, (const unsigned char *)aad_tag, sizeof(aad_tag)) == 1 &&
                   EVP_DecryptUpdate(x, NULL, &n, (const unsigned char *)project,
                                     (int)strlen(project) + 1) == 1 &&
                   EVP_DecryptUpdate(x, NULL, &n, (const unsigned char *)name,
                                     (int)strlen(name) + 1) == 1
               ? 0
               : -EIO;
}

int ctl_secret_seal(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const void *value, size_t len,
                    unsigned char nonce[CTL_SECRET_NONCE_LEN], unsigned char *out)
{
    if (len == 0 || len > CTL_SECRET_MAX || RAND_bytes(nonce, CTL_SECRET_NONCE_LEN) != 1)
        return -EINVAL;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n = 0, m = 0;
    int ok = x && EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, CTL_SECRET_NONCE_LEN, NULL) == 1 &&
             EVP_EncryptInit_ex(x, NULL, NULL, key, nonce) == 1 && set_aad(x, project, name) == 0 &&
             EVP_EncryptUpdate(x, out, &n, value, (int)len) == 1 &&
             EVP_EncryptFinal_ex(x, out + n, &m) == 1 && (size_t)(n + m) == len &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, CTL_SECRET_TAG_LEN, out + len) == 1;
    EVP_CIPHER_CTX_free(x);
    return ok ? 0 : -EIO;
}

int ctl_secret_open(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const unsigned char nonce[CTL_SECRET_NONCE_LEN],
                    const unsigned char *sealed, size_t sealed_len, unsigned char *out)
{
    if (sealed_len <= CTL_SECRET_TAG_LEN || sealed_len > CTL_SECRET_MAX + CTL_SECRET_TAG_LEN)
        return -EBADMSG;
    size_t len = sealed_len - CTL_SECRET_TAG_LEN;
    unsigned char tag[CTL_SECRET_TAG_LEN];
    memcpy(tag, sealed + len, sizeof(tag));
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n = 0, m = 0;
    int ok = x && EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, CTL_SECRET_NONCE_LEN, NULL) == 1 &&
             EVP_DecryptInit_ex(x, NULL, NULL, key, nonce) == 1 &&
             set_aad_dec(x, project, name) == 0 &&
             EVP_DecryptUpdate(x, out, &n, sealed, (int)len) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, CTL_SECRET_TAG_LEN, tag) == 1;
    /* the tag is checked here: a single changed byte anywhere fails */
    int fin = ok ? EVP_DecryptFinal_ex(x, out + n, &m) : 0;
    EVP_CIPHER_CTX_free(x);
    if (!ok)
        return -EIO;
    if (fin != 1) {
        OPENSSL_cleanse(out, len);
        return -EBADMSG;
    }
    return (size_t)(n + m) == len ? (int)len : -EIO;
}

/* ------------------------------------------------------------------------------------ */
/* At launch                                                                             */

json_t *ctl_secret_env(struct ctl *c, const char *project, const json_t *names, char *err,
                       size_t errlen)
{
    json_t *env = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        const char *name = json_string_value(v);
        struct store_secret s;
        int rc = name ? store_secret_get(c->store, project, name, &s) : -EINVAL;
        unsigned char *plain = rc == 0 ? xmalloc(s.sealed_len) : NULL;
        int len = rc == 0 ? ctl_secret_open(c->secret_key, project, name, s.nonce, s.sealed,
                                            s.sealed_len, plain)
                          : rc;
        if (len > 0)
            json_object_set_new(env, name, json_stringn((const char *)plain, (size_t)len));
        if (plain)
            OPENSSL_cleanse(plain, s.sealed_len);
        free(plain);
        if (rc == 0)
            store_secret_release(&s);
        if (len > 0)
            continue;
        if (len == -ENOENT)
            snprintf(err, errlen,
                     "secret '%s' of project '%s' does not exist (docket secret set %s %s)",
                     name ? name : "?", project, project, name ? name : "?");
        else if (len == -EBADMSG)
            snprintf(err, errlen,
                     "secret '%s' of project '%s' cannot be decrypted: its authentication tag "
                     "does not match (the stored value was altered, or the secrets key file "
                     "changed); set it again",
                     name ? name : "?", project);
        else
            snprintf(err, errlen, "secret '%s' of project '%s' cannot be read: %s",
                     name ? name : "?", project, store_errmsg(c->store));
        json_decref(env);
        return NULL;
    }
    return env;
}

/* ------------------------------------------------------------------------------------ */
/* Key rotation (docs/security.md "Rotating the secrets key")                             */

/* Every secret's project and name, [[project, name]...]. NULL on a store error. */
static int name_one(void *arg, const struct store_secret *s)
{
    json_array_append_new(arg, json_pack("[s,s]", s->project, s->name));
    return 0;
}

/* Re-seal one secret from key `from` to key `to` (its set_by and set_ms kept). */
static int reseal(struct ctl *c, const unsigned char *from, const unsigned char *to,
                  const char *project, const char *name, char *err, size_t errlen)
{
    struct store_secret s;
    int rc = store_secret_get(c->store, project, name, &s);
    if (rc < 0) {
        snprintf(err, errlen, "cannot read secret '%s' of project '%s': %s", name, project,
                 store_errmsg(c->store));
        return rc;
    }
    unsigned char *plain = xmalloc(s.sealed_len);
    int len = ctl_secret_open(from, project, name, s.nonce, s.sealed, s.sealed_len, plain);
    if (len <= 0) {
        snprintf(err, errlen,
                 "secret '%s' of project '%s' does not open with the current key (altered, or "
                 "sealed with another key): remove it or set it again, then rotate",
                 name, project);
        rc = -EBADMSG;
    } else {
        rc = ctl_secret_seal(to, project, name, plain, (size_t)len, s.nonce, s.sealed);
        if (rc == 0)
            rc = store_secret_put(c->store, &s);
        if (rc < 0)
            snprintf(err, errlen, "cannot store secret '%s' of project '%s' sealed anew: %s", name,
                     project, store_errmsg(c->store));
    }
    OPENSSL_cleanse(plain, s.sealed_len);
    free(plain);
    store_secret_release(&s);
    return rc;
}

/* Every secret re-sealed from the current key to k2 and an audit row, in one durable
 * transaction; *n counts them. */
static int reseal_all(struct ctl *c, const unsigned char *k2, const char *path, int *n, char *err,
                      size_t errlen)
{
    json_t *all = json_array(), *pn;
    size_t i;
    int rc = store_begin(c->store);
    if (rc == 0 && (rc = store_secret_list(c->store, NULL, name_one, all)) < 0)
        snprintf(err, errlen, "cannot list the secrets: %s", store_errmsg(c->store));
    json_array_foreach(all, i, pn) {
        if (rc < 0)
            break;
        rc = reseal(c, c->secret_key, k2, json_string_value(json_array_get(pn, 0)),
                    json_string_value(json_array_get(pn, 1)), err, errlen);
    }
    *n = (int)json_array_size(all);
    json_decref(all);
    json_t *after = json_pack("{s:i}", "secrets", *n);
    if (rc == 0 && (rc = ctl_audit(c, "docketd", "secrets.rotate_key", path, NULL, after,
                                   "docketd --rotate-secrets-key")) < 0)
        snprintf(err, errlen, "cannot audit: %s", store_errmsg(c->store));
    json_decref(after);
    if (rc == 0 && ((rc = store_commit(c->store)) < 0 || (rc = store_sync(c->store)) < 0))
        snprintf(err, errlen, "cannot commit: %s", store_errmsg(c->store));
    if (rc < 0 && store_in_tx(c->store))
        store_rollback(c->store);
    return rc;
}

/* Make `path` (the renamed key) durable in its directory. */
static void sync_dir_of(const char *path)
{
    char dir[CTL_PATH_MAX + 32];
    str_copy(dir, sizeof(dir), path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int ctl_secrets_recover(struct ctl *c, char *err, size_t errlen)
{
    char path[CTL_PATH_MAX + 32], next[CTL_PATH_MAX + 40];
    unsigned char k2[CTL_SECRET_KEY_LEN];
    key_path(c, path, sizeof(path));
    snprintf(next, sizeof(next), "%s.new", path);
    if (access(next, F_OK) != 0)
        return 0;
    int rc = read_key(next, k2, err, errlen);
    if (rc < 0)
        return rc;
    /* which key do the stored secrets open with? (a database without secrets: either) */
    json_t *all = json_array();
    rc = store_secret_list(c->store, NULL, name_one, all);
    bool committed = true;
    if (rc == 0 && json_array_size(all) > 0) {
        json_t *pn = json_array_get(all, 0);
        const char *project = json_string_value(json_array_get(pn, 0));
        const char *name = json_string_value(json_array_get(pn, 1));
        struct store_secret s;
        if ((rc = store_secret_get(c->store, project, name, &s)) == 0) {
            unsigned char *plain = xmalloc(s.sealed_len);
            committed =
                ctl_secret_open(k2, project, name, s.nonce, s.sealed, s.sealed_len, plain) > 0;
            OPENSSL_cleanse(plain, s.sealed_len);
            free(plain);
            store_secret_release(&s);
        }
    }
    json_decref(all);
    if (rc < 0) {
        snprintf(err, errlen, "cannot read the secrets: %s", store_errmsg(c->store));
    } else if (committed) { /* the rotation committed, then stopped: finish it */
        if (rename(next, path) < 0) {
            snprintf(err, errlen, "cannot rename '%s' to '%s': %s", next, path, strerror(errno));
            rc = -errno;
        } else {
            sync_dir_of(path);
            memcpy(c->secret_key, k2, sizeof(k2));
            log_warn("secrets_key_rotation_finished", "path=%s", path);
        }
    } else { /* it never committed: the old key is still the one */
        unlink(next);
        log_warn("secrets_key_rotation_abandoned", "path=%s", next);
    }
    OPENSSL_cleanse(k2, sizeof(k2));
    return rc;
}

int ctl_secrets_rotate(struct ctl *c, char *err, size_t errlen)
{
    char path[CTL_PATH_MAX + 32], next[CTL_PATH_MAX + 40];
    unsigned char k2[CTL_SECRET_KEY_LEN];
    int n = 0;
    key_path(c, path, sizeof(path));
    snprintf(next, sizeof(next), "%s.new", path);
    /* the new key on disk first, next to the old one: whatever stops docketd from here
     * on, ctl_secrets_recover finds which of the two the database holds */
    int rc = new_key(k2, err, errlen);
    if (rc == 0)
        rc = write_key(next, k2, err, errlen);
    if (rc == 0 && (rc = reseal_all(c, k2, path, &n, err, errlen)) < 0)
        unlink(next); /* rolled back: the old key stays */
    if (rc == 0 && rename(next, path) < 0) {
        snprintf(err, errlen, "cannot rename '%s' to '%s': %s (docketd finishes at its next start)",
                 next, path, strerror(errno));
        rc = -errno;
    }
    if (rc == 0) {
        sync_dir_of(path);
        memcpy(c->secret_key, k2, sizeof(k2));
        log_info("secrets_key_rotated", "path=%s secrets=%d", path, n);
    }
    OPENSSL_cleanse(k2, sizeof(k2));
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Handlers                                                                              */

static bool project_known(struct ctl_req *r)
{
    if (sched_project_find(r->c->sched, r->arg[0]) >= 0)
        return true;
    ctl_reply_errorf(r->c, r->req, 404, "project", "no such project '%.64s'", r->arg[0]);
    return false;
}

static bool name_ok(struct ctl_req *r)
{
    if (proto_secret_name_ok(r->arg[1]))
        return true;
    ctl_reply_errorf(r->c, r->req, 400, "name",
                     "bad secret name '%.64s': a variable name (letters, digits, '_', not "
                     "starting with a digit, at most %d bytes)",
                     r->arg[1], PROTO_SECRET_NAME_MAX);
    return false;
}

static json_t *secret_json(const struct store_secret *s)
{
    json_t *allow = s->allow[0] ? json_loads(s->allow, 0, NULL) : NULL;
    return json_pack("{s:s,s:s,s:s,s:I,s:o}", "project", s->project, "name", s->name, "set_by",
                     s->set_by, "set_ms", (json_int_t)s->set_ms, "allow",
                     json_is_array(allow) ? allow : json_array());
}

static int list_one(void *arg, const struct store_secret *s)
{
    json_array_append_new(arg, secret_json(s));
    return 0;
}

void h_secrets_list(struct ctl_req *r)
{
    if (!project_known(r))
        return;
    json_t *arr = json_array();
    if (store_secret_list(r->c->store, r->arg[0], list_one, arr) < 0) {
        json_decref(arr);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "secrets", arr));
}

/* One entry of an allow list: "members", "user:NAME" or "class:NAME". */
static bool allow_entry_ok(const char *s)
{
    if (!s)
        return false;
    if (strcmp(s, "members") == 0)
        return true;
    const char *colon = strchr(s, ':');
    if (!colon || !str_is_name(colon + 1))
        return false;
    size_t n = (size_t)(colon - s);
    return (n == 4 && strncmp(s, "user", 4) == 0) || (n == 5 && strncmp(s, "class", 5) == 0);
}

/* The body's "allow" as stored text into out (compact JSON, "" for none), or, when the
 * body has none, `keep` (the secret's current list). -1 after replying 400. */
static int put_allow(struct ctl_req *r, json_t *b, const char *keep, char *out, size_t len)
{
    json_t *a = json_object_get(b, "allow");
    size_t i;
    json_t *v;
    if (!a) {
        str_copy(out, len, keep);
        return 0;
    }
    bool ok = json_is_array(a) && json_array_size(a) <= CTL_SECRET_ALLOW_MAX;
    json_array_foreach(a, i, v)
        ok = ok && allow_entry_ok(json_string_value(v));
    char *text = ok ? json_dumps(a, JSON_COMPACT) : NULL;
    if (!text || strlen(text) >= len) {
        free(text);
        ctl_reply_errorf(r->c, r->req, 400, "allow",
                         "allow must be a list of at most %d of \"members\", \"user:NAME\" and "
                         "\"class:NAME\" (empty: the project's leads only)",
                         CTL_SECRET_ALLOW_MAX);
        return -1;
    }
    str_copy(out, len, json_array_size(a) ? text : "");
    free(text);
    return 0;
}

/* The value of a PUT body, validated: {"value": "...", "allow": [...]}. NULL after
 * replying 400. */
static const char *put_value(struct ctl_req *r, json_t *b, size_t *len)
{
    static const char *const known[] = {"value", "allow", NULL};
    struct proto_error e;
    if (proto_check_fields(b, "", known, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return NULL;
    }
    json_t *v = json_object_get(b, "value");
    *len = json_string_length(v);
    if (!json_is_string(v) || *len == 0 || *len > CTL_SECRET_MAX ||
        memchr(json_string_value(v), '\0', *len)) {
        ctl_reply_errorf(r->c, r->req, 400, "value",
                         "value must be a string of 1 to %d bytes without NUL bytes",
                         CTL_SECRET_MAX);
        return NULL;
    }
    return json_string_value(v);
}

void h_secret_put(struct ctl_req *r)
{
    if (!project_known(r) || !name_ok(r))
        return;
    json_t *b = ctl_body_json(r, false);
    size_t len = 0;
    const char *value = b ? put_value(r, b, &len) : NULL;
    if (!value) {
        json_decref(b);
        return;
    }
    struct store_secret s;
    memset(&s, 0, sizeof(s));
    str_copy(s.project, sizeof(s.project), r->arg[0]);
    str_copy(s.name, sizeof(s.name), r->arg[1]);
    str_copy(s.set_by, sizeof(s.set_by), r->id.user);
    s.set_ms = clock_now_ms();
    s.sealed_len = len + CTL_SECRET_TAG_LEN;
    s.sealed = xmalloc(s.sealed_len);
    struct store_secret old;
    bool existed = store_secret_get(r->c->store, s.project, s.name, &old) == 0;
    if (existed)
        store_secret_release(&old);
    if (put_allow(r, b, existed ? old.allow : "", s.allow, sizeof(s.allow)) < 0) {
        json_decref(b);
        free(s.sealed);
        return;
    }
    int rc = ctl_secret_seal(r->c->secret_key, s.project, s.name, value, len, s.nonce, s.sealed);
    json_decref(b); /* the value in clear goes no further than this */
    if (rc == 0)
        rc = store_secret_put(r->c->store, &s);
    /* the audit trail names the secret and who may receive it, never its value */
    json_t *shown = secret_json(&s);
    json_t *after = json_pack("{s:s,s:s,s:O}", "project", s.project, "name", s.name, "allow",
                              json_object_get(shown, "allow"));
    json_decref(shown);
    char target[256];
    snprintf(target, sizeof(target), "%s/%s", s.project, s.name);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "secret.set", target, NULL, after,
                       existed ? "replaced" : "created");
    json_decref(after);
    free(s.sealed);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "cannot store the secret: %s",
                         store_errmsg(r->c->store));
        return;
    }
    log_info("secret_set", "project=%s name=%s by=%s", s.project, s.name, s.set_by);
    ctl_reply_json(r->c, r->req, existed ? 200 : 201,
                   json_pack("{s:o}", "secret", secret_json(&s)));
}

void h_secret_delete(struct ctl_req *r)
{
    if (!project_known(r) || !name_ok(r))
        return;
    int rc = store_secret_delete(r->c->store, r->arg[0], r->arg[1]);
    if (rc == -ENOENT) {
        ctl_reply_errorf(r->c, r->req, 404, "name", "project '%s' has no secret '%s'", r->arg[0],
                         r->arg[1]);
        return;
    }
    char target[256];
    snprintf(target, sizeof(target), "%s/%s", r->arg[0], r->arg[1]);
    json_t *before = json_pack("{s:s,s:s}", "project", r->arg[0], "name", r->arg[1]);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "secret.rm", target, before, NULL, NULL);
    json_decref(before);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    log_info("secret_removed", "project=%s name=%s by=%s", r->arg[0], r->arg[1], r->id.user);
    ctl_reply_json(
        r->c, r->req, 200,
        json_pack("{s:s,s:s,s:b}", "project", r->arg[0], "name", r->arg[1], "removed", 1));
}
