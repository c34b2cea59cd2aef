/* api_errors.c -- tables generated from api_errors.def. */
#include "api_errors.h"

static const unsigned statuses[] = {
#define X(name, status, title) status,
#include "api_errors.def"
#undef X
};

static const char *const titles[] = {
#define X(name, status, title) title,
#include "api_errors.def"
#undef X
};

/* A code is its name lower-cased. The preprocessor can only give the upper-case spelling, and
 * lower-casing at build time would need a generator, so codes_fill does it once at run time. */
static const char *const names[] = {
#define X(name, status, title) #name,
#include "api_errors.def"
#undef X
};

static char codes[API_E__COUNT][40];

unsigned
api_errors_status(enum api_error e)
{
    return (unsigned)e < API_E__COUNT ? statuses[e] : 500;
}

const char *
api_errors_title(enum api_error e)
{
    return (unsigned)e < API_E__COUNT ? titles[e] : "Internal error";
}

/* Filled at first use, which may come from any thread: pthread_once, because two threads
 * writing the table at once would be a data race even though both write the same bytes. */
#include <ctype.h>
#include <pthread.h>

static pthread_once_t codes_once = PTHREAD_ONCE_INIT;

static void
codes_fill(void)
{
    for (int i = 0; i < API_E__COUNT; i++) {
        const char *s = names[i];
        int j = 0;
        for (; j < (int)sizeof(codes[i]) - 1 && s[j] != '\0'; j++)
            codes[i][j] = (char)tolower((unsigned char)s[j]);
        codes[i][j] = '\0';
    }
}

const char *
api_errors_code(enum api_error e)
{
    pthread_once(&codes_once, codes_fill);
    return (unsigned)e < API_E__COUNT ? codes[e] : "internal";
}
