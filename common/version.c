/* version.c — the build's version string (version.h says where it comes from). */
#include "version.h"

#include <stdio.h>

#include "version_gen.h"   /* $(BUILD)/gen/version_gen.h: #define PRISM_VERSION_STRING "..." (Makefile) */

const char *prism_version(void) { return PRISM_VERSION_STRING; }

int prism_version_print(const char *prog) {
    printf("%s %s\n", prog, PRISM_VERSION_STRING);
    return 0;
}
