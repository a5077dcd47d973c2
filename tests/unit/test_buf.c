/* test_buf.c — the growable buffer (common/buf.h): appends stay NUL-terminated, a refused append (over its max
 * or the hard cap BUF_MAX) leaves the buffer as it was, formatted text of any length fits, and release/free
 * leave it empty. */
#include "harness.h"
#include "buf.h"

#include <stdint.h>
#include <string.h>

TEST(appends_are_terminated_and_grow) {
    buf b = {0};
    ASSERT_EQ_INT(0, buf_append(&b, "abc", 3, 100));
    ASSERT_EQ_INT(3, b.len);
    ASSERT_STREQ("abc", b.data);
    for (int i = 0; i < 1000; i++) ASSERT_EQ_INT(0, buf_puts(&b, "0123456789", BUF_MAX));
    ASSERT_EQ_INT(10003, b.len);
    ASSERT_EQ_INT(0, b.data[b.len]);
    ASSERT_TRUE(b.cap > b.len);
    buf_free(&b);
    ASSERT_TRUE(b.data == NULL && b.len == 0 && b.cap == 0);
    buf_free(&b);   /* twice is fine */
}

TEST(refused_append_leaves_the_buffer_unchanged) {
    buf b = {0};
    ASSERT_EQ_INT(0, buf_puts(&b, "12345", 8));
    ASSERT_EQ_INT(-1, buf_puts(&b, "6789", 8));   /* 9 > max 8 */
    ASSERT_EQ_INT(5, b.len);
    ASSERT_STREQ("12345", b.data);
    ASSERT_EQ_INT(0, buf_puts(&b, "678", 8));     /* exactly max */
    ASSERT_STREQ("12345678", b.data);
    ASSERT_EQ_INT(-1, buf_printf(&b, 10, "%s", "abc"));
    ASSERT_STREQ("12345678", b.data);
    /* the hard cap holds whatever max says (nothing is allocated for the refused size) */
    ASSERT_EQ_INT(-1, buf_append(&b, "x", BUF_MAX + 1, SIZE_MAX));
    ASSERT_EQ_INT(-1, buf_append(&b, "x", SIZE_MAX, SIZE_MAX));   /* len + n would wrap */
    ASSERT_EQ_INT(8, b.len);
    buf_free(&b);
}

TEST(printf_of_any_length_and_release) {
    buf b = {0};
    char big[3000];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ASSERT_EQ_INT(0, buf_printf(&b, BUF_MAX, "n=%d ", 42));
    ASSERT_EQ_INT(0, buf_printf(&b, BUF_MAX, "%s|", big));
    ASSERT_EQ_INT(5 + 2999 + 1, b.len);
    ASSERT_EQ_INT(0, strncmp(b.data, "n=42 yyy", 8));
    ASSERT_EQ_INT('|', b.data[b.len - 1]);
    char *d = buf_release(&b);
    ASSERT_TRUE(d != NULL && b.data == NULL && b.len == 0 && b.cap == 0);
    free(d);
    ASSERT_TRUE(buf_release(&b) == NULL);   /* empty: NULL */
}
