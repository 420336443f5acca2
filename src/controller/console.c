/*
 * console.c - the web console as docketd serves it (docs/console.md): the page at `/`
 * and its assets at /console/NAME, both public and without data (every number on the
 * page comes from the API with the viewer's own token); the one-time login of
 * `docket console` (a code, asked for by an authenticated user, that the page exchanges
 * once, within CTL_CONSOLE_CODE_MS, for a session token of the same user and role, derived
 * from the token that asked: it names it as its parent, ends no later, and a revoke of
 * any ancestor ends it, docs/security.md "Derived tokens"); and
 * GET /v1/whoami, which tells the page who it is logged in as.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/http.h>
#include <openssl/evp.h>
#include <string.h>

#include "controller/admin.h"
#include "controller/authz.h"
#include "controller/console.h"
#include "controller/console_assets.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "util/clock.h"
#include "util/etag.h"
#include "util/str.h"

/* The page may load only its own files and talk only to this origin: no inline style, no
 * framing, no form posts elsewhere, and no inline script but the page's own (boot.js,
 * which sends the first screen's reads while the page is parsed), allowed by its SHA-256
 * (csp_of): a script injected into the page would not match it. */
#define CSP_SCRIPT "default-src 'none'; script-src 'self'"
#define CSP_REST                                                                                   \
    "; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; "              \
    "form-action 'none'; frame-ancestors 'none'"
#define CSP_HASHES 4 /* inline scripts at most: more are not allowed */

static const char not_built[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<title>Docket console not built</title></head><body><h1>Docket console not built</h1>"
    "<p>This docketd was built without the web console (Node.js and npm were missing at "
    "build time). Install them (<code>scripts/install-deps.sh</code> does), run "
    "<code>make</code>, which runs <code>npm ci &amp;&amp; npm run build</code> in "
    "<code>console/</code>, and restart docketd.</p><p>The API at <code>/v1/</code> works "
    "without it; see docs/console.md.</p></body></html>\n";

static const struct {
    const char *ext, *type;
} types[] = {{".html", "text/html; charset=utf-8"},
             {".js", "text/javascript; charset=utf-8"},
             {".css", "text/css; charset=utf-8"},
             {".png", "image/png"},
             {".svg", "image/svg+xml"},
             {".map", "application/json"}};

static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* The CSP of `page` (NULL: of a file, which runs no inline script) into out: each
 * `<script>` without attributes in it, up to `</script>`, allowed by the base64 of its
 * SHA-256 (as CSP Level 2 hashes it: the bytes between the tags). */
static void csp_of(const struct console_asset *page, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "%s", CSP_SCRIPT);
    const char *p = page ? (const char *)page->data : NULL, *end = p ? p + page->len : NULL;
    for (int i = 0; p && i < CSP_HASHES; i++) {
        const char *open = memmem(p, (size_t)(end - p), "<script>", 8);
        const char *body = open ? open + 8 : NULL;
        const char *close = body ? memmem(body, (size_t)(end - body), "</script>", 9) : NULL;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
        if (!close || EVP_Digest(body, (size_t)(close - body), md, &mdlen, EVP_sha256(), NULL) != 1)
            break;
        EVP_EncodeBlock((unsigned char *)b64, md, (int)mdlen);
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, " 'sha256-%s'", b64);
        p = close + 9;
    }
    if (n < cap)
        snprintf(out + n, cap - n, "%s", CSP_REST);
}

static void page_headers(struct evhttp_request *req, const struct console_asset *page)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char csp[sizeof(CSP_SCRIPT) + sizeof(CSP_REST) + CSP_HASHES * 64];
    csp_of(page, csp, sizeof(csp));
    evhttp_add_header(h, "Content-Security-Policy", csp);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_add_header(h, "X-Frame-Options", "DENY");
}

/* Send the file `a` (the page or one of its files) with its ETag: 304 to a browser that
 * holds it already. The page and the files it names (app.js, app.css) are asked again on
 * every load (no-cache: a new docketd serves its own), which costs a 304; a chunk, named
 * by the hash of its content (chunk-HASH.js), is kept for a year. */
static void send_asset(struct ctl_req *r, const struct console_asset *a)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "ETag", a->etag);
    evhttp_add_header(h, "Cache-Control",
                      strncmp(a->name, "chunk-", 6) == 0 ? "public, max-age=31536000, immutable"
                                                         : "no-cache");
    const char *inm = evhttp_find_header(evhttp_request_get_input_headers(r->req), "If-None-Match");
    if (etag_match(inm, a->etag)) {
        r->c->metrics.http_by_code[304]++;
        evhttp_send_reply(r->req, 304, "Not Modified", NULL);
        r->c->turn.replies++;
        return;
    }
    ctl_reply_raw(r->c, r->req, 200, type_of(a->name), a->data, a->len);
}

static const struct console_asset *asset(const char *name)
{
    for (const struct console_asset *a = console_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

void h_console_page(struct ctl_req *r)
{
    const struct console_asset *a = console_built ? asset("index.html") : NULL;
    page_headers(r->req, a);
    if (!a) {
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Cache-Control", "no-cache");
        ctl_reply_raw(r->c, r->req, 200, "text/html; charset=utf-8", not_built,
                      sizeof(not_built) - 1);
        return;
    }
    send_asset(r, a);
}

void h_console_asset(struct ctl_req *r)
{
    const struct console_asset *a = asset(r->arg[0]);
    if (!a) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such console file '%.64s'%s", r->arg[0],
                         console_built ? "" : " (this docketd was built without the console)");
        return;
    }
    page_headers(r->req, strcmp(a->name, "index.html") == 0 ? a : NULL);
    send_asset(r, a);
}

/* A free slot: an empty or expired one, else the one that expires first. */
static struct ctl_console_code *code_slot(struct ctl *c, int64_t now)
{
    struct ctl_console_code *best = &c->console_codes[0];
    for (int i = 0; i < CTL_CONSOLE_CODES; i++) {
        struct ctl_console_code *s = &c->console_codes[i];
        if (!s->hash[0] || s->expires_ms <= now)
            return s;
        if (s->expires_ms < best->expires_ms)
            best = s;
    }
    return best;
}

void h_console_code(struct ctl_req *r)
{
    static const char *const known[] = {NULL};
    struct proto_error e;
    char code[96];
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return;
    int rc = proto_check_fields(b, "", known, &e);
    json_decref(b);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    if (ctl_random_token("dkc_", code, sizeof(code)) < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "no randomness");
        return;
    }
    int64_t now = clock_now_ms();
    struct ctl_console_code *s = code_slot(r->c, now);
    store_token_hash(code, s->hash);
    str_copy(s->user, sizeof(s->user), r->id.user);
    s->role = r->id.role;
    s->expires_ms = now + CTL_CONSOLE_CODE_MS;
    str_copy(s->parent, sizeof(s->parent), r->id.token_hash);
    ctl_reply_json(r->c, r->req, 201,
                   json_pack("{s:s,s:I,s:s}", "code", code, "expires_ms", (json_int_t)s->expires_ms,
                             "user", s->user));
}

/* Take the slot of `code` (single use: it is cleared whether or not it expired). */
static int code_take(struct ctl *c, const char *code, struct ctl_console_code *out)
{
    char hash[65];
    store_token_hash(code, hash);
    for (int i = 0; i < CTL_CONSOLE_CODES; i++) {
        struct ctl_console_code *s = &c->console_codes[i];
        if (!s->hash[0] || strcmp(s->hash, hash) != 0)
            continue;
        *out = *s;
        memset(s, 0, sizeof(*s));
        return out->expires_ms > clock_now_ms() ? 0 : -ETIMEDOUT;
    }
    return -ENOENT;
}

/* The life of the session a code gives: CTL_CONSOLE_SESSION_MS, and never past its
 * parent's expiry (*cap, 0 for none). A parent revoked or expired since it asked gives
 * none (401). */
static int session_ttl(struct ctl *c, const struct ctl_console_code *slot, int64_t *ttl,
                       int64_t *cap, struct proto_error *e)
{
    int64_t now = clock_now_ms();
    *ttl = CTL_CONSOLE_SESSION_MS;
    *cap = 0;
    if (!slot->parent[0])
        return 0; /* asked over the socket: the Unix account has no token to end with */
    struct store_token p;
    if (store_token_get(c->store, slot->parent, &p) < 0 || p.revoked_ms ||
        (p.expires_ms && p.expires_ms <= now))
        return proto_errorf(e, 401, NULL, "code",
                            "the token that asked for this code is revoked or expired: log in "
                            "with a live token and run docket console again");
    *cap = p.expires_ms;
    return 0;
}

void h_console_session(struct ctl_req *r)
{
    static const char *const known[] = {"code", NULL};
    struct proto_error e;
    struct ctl_console_code slot;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    const char *code = json_string_value(json_object_get(b, "code"));
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && (!code || strlen(code) > 128))
        rc = proto_errorf(&e, 400, NULL, "code", "code must be the string docket console printed");
    if (rc == 0 && code_take(r->c, code, &slot) < 0)
        rc = proto_errorf(&e, 401, NULL, "code",
                          "this login code is unknown, used or expired (a code works once, "
                          "within %d s): run docket console again",
                          CTL_CONSOLE_CODE_MS / 1000);
    struct store_token t;
    char tok[96];
    int64_t ttl = 0, cap = 0;
    memset(&t, 0, sizeof(t));
    if (rc == 0)
        rc = session_ttl(r->c, &slot, &ttl, &cap, &e);
    if (rc == 0) {
        str_copy(t.user, sizeof(t.user), slot.user);
        str_copy(t.role, sizeof(t.role), ctl_role_name(slot.role));
        str_copy(t.parent, sizeof(t.parent), slot.parent);
        t.expires_ms = cap; /* ctl_token_issue ends it no later */
        rc = ctl_token_issue(r->c, slot.user, &t, ttl, tok, sizeof(tok), &e);
    }
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    else
        ctl_reply_json(r->c, r->req, 201, ctl_token_json(tok, &t));
    json_decref(b);
}

void h_whoami(struct ctl_req *r)
{
    struct ctl_target t;
    ctl_req_target(r, "", NULL, &t); /* loads the caller's projects into r->my_projects */
    json_t *projects = r->my_projects ? json_deep_copy(r->my_projects) : json_object();
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s,s:s,s:o}", "user", r->id.user, "role",
                             ctl_role_name(r->id.role), "token_id", r->id.token_id, "projects",
                             projects));
}
