/* assets.h -- the browser files compiled into the binary (web/: scripts, pages, styles). The
 * table is generated at build time by cmake/embed_assets.cmake (assets_embedded.c in the build
 * directory) and served by handlers/assets.c. */
#ifndef TOCSIN_ASSETS_H
#define TOCSIN_ASSETS_H

#include <stddef.h>

struct asset {
    const char *name;         /* the file name under web/, e.g. "client.js" */
    const char *content_type; /* from the extension */
    const char *etag;         /* quoted strong ETag of the content */
    size_t len;               /* bytes of body (UTF-8; no NUL inside) */
    const char *body;
};

extern const struct asset assets[];
extern const size_t assets_count;

/* The asset of that file name, or NULL. */
const struct asset *assets_find(const char *name);

#endif
