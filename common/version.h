/* version.h — the version of this build, the same in all three programs (`--version`).
 *
 * prism_version() is `git describe --always --dirty --tags` of the tree the binaries were built from, taken by
 * the Makefile at build time into $(BUILD)/gen/version.h (rewritten only when it changes, so a new commit
 * relinks and nothing else is rebuilt). From a tarball without .git it is the first line of the file VERSION,
 * which `git archive` fills in (.gitattributes: export-subst); "unknown" when neither says. Static string.
 * prism_version_print(prog): prints "PROG VERSION" on stdout and returns 0 (the exit status of --version).
 */
#ifndef PRISM_VERSION_H
#define PRISM_VERSION_H

const char *prism_version(void);
int prism_version_print(const char *prog);

#endif
