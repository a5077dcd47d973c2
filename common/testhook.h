/* testhook.h — the one test hook: a fault a test switches on through the environment, compiled in only for test
 * builds (-DPRISM_TEST_HOOKS, as SQLite's SQLITE_TEST).
 *
 *   if (testhook_fault("PRISM_FAULT_AT_RUNG", "exit")) { ... die here ... }
 *
 * Without PRISM_TEST_HOOKS testhook_fault(name, value) is the constant 0: the branch, its message and the variable's
 * name are not in the object, so the shipped build/prism-* carry no hook (tests/integration/test_testhooks.sh runs
 * `strings` on them). The Makefile compiles every source that calls it a second time with the flag into
 * build/obj/hooks/ and links those objects into the unit tests and build/hooks/prism-{sweep,worker}, which an
 * integration test runs while it sets a PRISM_FAULT_* variable (tests/lib.sh's bin).
 */
#ifndef PRISM_TESTHOOK_H
#define PRISM_TESTHOOK_H

#ifdef PRISM_TEST_HOOKS
/* 1 when the environment variable name is set to value. */
int testhook_fault(const char *name, const char *value);
#else
#define testhook_fault(name, value) 0
#endif
#endif
