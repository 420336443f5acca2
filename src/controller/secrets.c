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

#include "controller/ctl.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/xalloc.h"

static const char aad_tag[] = "docket-secret-v1";

/* ------------------------------------------------------------------------------------ */
/* The key file                                                                          */

static int make_key(const char *path, char *err, size_t errlen)
{
    unsigned char k[CTL_SECRET_KEY_LEN];
    if (RAND_bytes(k, sizeof(k)) != 1) {
        snprintf(err, errlen, "no randomness for the secrets key");
        return -EIO;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create the secrets key '%s': %s", path, strerror(errno));
        return -errno;
    }
    ssize_t w = write(fd, k, sizeof(k));
    int ok = w == (ssize_t)sizeof(k) && fsync(fd) == 0;
    OPENSSL_cleanse(k, sizeof(k));
    if (close(fd) != 0 || !ok) {
        unlink(path);
        snprintf(err, errlen, "cannot write the secrets key '%s'", path);
        return -EIO;
    }
    log_info("secrets_key_made", "path=%s", path);
    return 0;
}

int ctl_secrets_start(struct ctl *c, char *err, size_t errlen)
{
    char path[CTL_PATH_MAX + 32];
    if (c->cfg.secrets_key[0])
        str_copy(path, sizeof(path), c->cfg.secrets_key);
    else
        snprintf(path, sizeof(path), "%s/secrets.key", c->cfg.state_dir);
    int rc;
    if (access(path, F_OK) != 0 && (rc = make_key(path, err, errlen)) < 0)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot open the secrets key '%s': %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    rc = 0;
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
    } else if (read(fd, c->secret_key, CTL_SECRET_KEY_LEN) != CTL_SECRET_KEY_LEN) {
        snprintf(err, errlen, "cannot read the secrets key '%s'", path);
        rc = -EIO;
    }
    close(fd);
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
    return json_pack("{s:s,s:s,s:s,s:I}", "project", s->project, "name", s->name, "set_by",
                     s->set_by, "set_ms", (json_int_t)s->set_ms);
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

/* The value of a PUT body, validated: {"value": "..."}. NULL after replying 400. */
static const char *put_value(struct ctl_req *r, json_t *b, size_t *len)
{
    static const char *const known[] = {"value", NULL};
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
    int rc = ctl_secret_seal(r->c->secret_key, s.project, s.name, value, len, s.nonce, s.sealed);
    json_decref(b); /* the value in clear goes no further than this */
    if (rc == 0)
        rc = store_secret_put(r->c->store, &s);
    /* the audit trail names the secret, never its value */
    json_t *after = json_pack("{s:s,s:s}", "project", s.project, "name", s.name);
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
