/*
 * secrets.h - what secrets.c owns: per-project secrets, sealed with AES-256-GCM
 * (docs/security.md), their key file and its rotation, and the secrets endpoints.
 */
#ifndef DOCKET_CONTROLLER_SECRETS_H
#define DOCKET_CONTROLLER_SECRETS_H

#include <jansson.h>
#include <stddef.h>

struct ctl;
struct ctl_req;

/* AES-256-GCM with a 96-bit nonce and a 128-bit tag. */
#define CTL_SECRET_KEY_LEN   32
#define CTL_SECRET_NONCE_LEN 12
#define CTL_SECRET_TAG_LEN   16
#define CTL_SECRET_MAX       65536 /* bytes of one value */
#define CTL_SECRET_ALLOW_MAX 32    /* entries of one secret's allow list */

/* ctl_secrets_start loads (or at first start makes) the key file, refusing one others
 * may read: 0 or -errno with err filled. seal writes len + CTL_SECRET_TAG_LEN bytes to
 * out with a fresh nonce; open returns the plain length, or -EBADMSG when the tag does
 * not match (altered value, other key, other project or name). ctl_secret_env opens the
 * secrets a job names ({NAME: value}), or NULL with err saying which one failed and
 * why. */
int ctl_secrets_start(struct ctl *c, char *err, size_t errlen);
/* Key rotation (with the store open, before serving). ctl_secrets_rotate: a new key in
 * KEY.new, every secret re-sealed with it and the rotation audited in one durable
 * transaction, then KEY.new renamed over KEY; on a failure the old key stays and nothing
 * changed. ctl_secrets_recover (every start): a KEY.new left by a rotation that stopped
 * half-way is finished when the database already holds the secrets under it, else
 * removed. 0 or -errno with err filled. */
int ctl_secrets_rotate(struct ctl *c, char *err, size_t errlen);
int ctl_secrets_recover(struct ctl *c, char *err, size_t errlen);
void ctl_secrets_stop(struct ctl *c);
int ctl_secret_seal(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const void *value, size_t len,
                    unsigned char nonce[CTL_SECRET_NONCE_LEN], unsigned char *out);
int ctl_secret_open(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const unsigned char nonce[CTL_SECRET_NONCE_LEN],
                    const unsigned char *sealed, size_t sealed_len, unsigned char *out);
json_t *ctl_secret_env(struct ctl *c, const char *project, const json_t *names, char *err,
                       size_t errlen);
void h_secrets_list(struct ctl_req *r);
void h_secret_put(struct ctl_req *r);
void h_secret_delete(struct ctl_req *r);

#endif
