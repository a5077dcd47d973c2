/* test_logesc.c — a logged field cannot end the line, move the cursor or be cut in the middle of an escape. */
#include "harness.h"
#include "logesc.h"

TEST(control_characters_become_escapes) {
    char out[256];
    ASSERT_STREQ("0\\nprism-sweep serve: event=complete job=1", log_escape(out, sizeof out, "0\nprism-sweep serve: event=complete job=1"));
    ASSERT_STREQ("a\\rb\\tc\\x1b[2K\\x7f\\x01", log_escape(out, sizeof out, "a\rb\tc\x1b[2K\x7f\x01"));
    ASSERT_STREQ("back\\\\slash", log_escape(out, sizeof out, "back\\slash"));
}

TEST(utf8_and_plain_text_are_kept) {
    char out[64];
    ASSERT_STREQ("cpu#1 Δ ok", log_escape(out, sizeof out, "cpu#1 Δ ok"));
    ASSERT_STREQ("-", log_escape(out, sizeof out, NULL));
    ASSERT_STREQ("", log_escape(out, sizeof out, ""));
}

TEST(cut_only_between_escapes) {
    char out[6];
    ASSERT_STREQ("ab\\n", log_escape(out, sizeof out, "ab\n\ncd"));   /* "ab\n\n" would need 7 bytes */
    char tiny[1];
    ASSERT_STREQ("", log_escape(tiny, sizeof tiny, "\n"));
    char four[4];
    ASSERT_STREQ("", log_escape(four, sizeof four, "\x01"));           /* \x01 needs 5 bytes with the NUL */
}

