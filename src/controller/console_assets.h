/*
 * console_assets.h - the web console's built files, embedded in docketd at build time
 * (console/embed.c writes their definition from console/dist). No file is read at run
 * time. console_built is false when docketd was built without the console (no node at
 * build time): then there are no assets and `/` says how to build it (docs/console.md).
 */
#ifndef DOCKET_CONTROLLER_CONSOLE_ASSETS_H
#define DOCKET_CONTROLLER_CONSOLE_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

struct console_asset {
    const char *name; /* a file name of console/dist: "index.html", "app.js" */
    const unsigned char *data;
    size_t len;
    const char *etag; /* "\"<16 hex digits>\"": FNV-1a of data, made at build time */
};

/* Ends with an entry whose name is NULL. */
extern const struct console_asset console_assets[];
extern const bool console_built;

#endif
