/* version.h -- what this binary is: the project version (CMakeLists.txt) and the git commit it
 * was built from, both filled in at build time by cmake/version.cmake into version.c. */
#ifndef TOCSIN_VERSION_H
#define TOCSIN_VERSION_H

extern const char version_number[]; /* e.g. "0.1.0" */
extern const char version_commit[]; /* short hash, "<hash>-dirty", or "unknown" */

#endif
