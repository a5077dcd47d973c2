/* testhook.c — testhook_fault (testhook.h): the environment read behind every test hook.
 *
 * Design: defined in every build but referenced only by objects compiled with -DPRISM_TEST_HOOKS, so the archive
 * member is linked into the test builds alone; it names no hook itself (the callers pass the names).
 */
#define PRISM_TEST_HOOKS
#include "testhook.h"

#include <stdlib.h>
#include <string.h>

int testhook_fault(const char *name, const char *value) {
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}
