/* assets.c -- lookup in the generated table of assets.h. */
#include "assets.h"

#include <string.h>

const struct asset *
assets_find(const char *name)
{
    for (size_t i = 0; i < assets_count; i++)
        if (assets[i].len > 0 && strcmp(assets[i].name, name) == 0)
            return &assets[i];
    return NULL;
}
