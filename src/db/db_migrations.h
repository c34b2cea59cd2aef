/* db_migrations.h -- the SQL migrations compiled into the binary. The table is generated at build
 * time from migrations/NNN_name.sql by cmake/embed_migrations.cmake and applied by db_migrate. */
#ifndef TOCSIN_DB_MIGRATIONS_H
#define TOCSIN_DB_MIGRATIONS_H

#include <stddef.h>

struct db_migration {
    int version;      /* NNN of the file name; strictly increasing along the array */
    const char *name; /* the file name, e.g. "001_init.sql" */
    const char *sql;  /* the file's exact text; its SHA-256 is the recorded checksum */
};

extern const struct db_migration db_migrations[];
extern const size_t db_migrations_count;

#endif
