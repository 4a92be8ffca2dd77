/*
 * check_csv.c -- the CSV reader of util/csv.h: RFC 4180 quoting, line
 * ends, blank lines, errors with LINE:COL, header lookup (a name given
 * twice refused), and the table reader agreeing with the streaming one.
 *
 * Inputs are written to a temporary file.  A long file crosses the
 * reader's 64 KiB chunk at many offsets, so the look-ahead after a CR or
 * a quote meets a refill somewhere.
 */
#define _XOPEN_SOURCE 700	/* fmemopen, mkstemp */

#include "util/csv.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write text to a new temporary file; its name into path. */
static void
put(char *path, size_t len, const char *text, size_t n)
{
	int fd;
	FILE *f;

	snprintf(path, len, "%s/check_csv.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, n, f), n);
	fclose(f);
}

/* Read a whole table from text; the kv_err, with *e filled. */
static kv_err
table(const char *text, struct csv_table *t, struct csv_error *e)
{
	char path[512];
	kv_err rc;

	put(path, sizeof(path), text, strlen(text));
	rc = csv_table_read(t, path, e);
	unlink(path);
	return rc;
}

START_TEST(quoting)
{
	struct csv_table t;
	struct csv_error e;

	ck_assert_int_eq(table("a,\"b,c\",d\r\n"
			       "1,\"say \"\"hi\"\"\",\r\n"
			       "\n"
			       "\"x\ny\",2,\"\"\n"
			       "\"\",\"\"\"\",\"a\r\nb\"", &t, &e), KV_OK);
	ck_assert_uint_eq(t.ncol, 3);
	ck_assert_str_eq(t.head[1], "b,c");
	ck_assert_uint_eq(t.nrow, 3);
	ck_assert_str_eq(t.row[0][1], "say \"hi\"");
	ck_assert_str_eq(t.row[0][2], "");
	ck_assert_str_eq(t.row[1][0], "x\ny");
	ck_assert_str_eq(t.row[1][2], "");
	ck_assert_str_eq(t.row[2][0], "");
	ck_assert_str_eq(t.row[2][1], "\"");
	ck_assert_str_eq(t.row[2][2], "a\r\nb");	/* kept as written */
	ck_assert_uint_eq(t.line[0], 2);
	ck_assert_uint_eq(t.line[1], 4);
	ck_assert_uint_eq(t.line[2], 6);
	ck_assert(!t.terminated);
	ck_assert_int_eq(csv_table_col(&t, "d"), 2);
	ck_assert_int_eq(csv_table_col(&t, "b,c"), 1);
	ck_assert_int_eq(csv_table_col(&t, "e"), -1);
	csv_table_release(&t);
}
END_TEST

START_TEST(line_ends)
{
	static const char *const same[] = {
		"a,b\n1,2\n3,4\n", "a,b\r\n1,2\r\n3,4\r\n", "a,b\n1,2\n3,4",
		"a,b\r\n1,2\r\n3,4", "\n\na,b\n\n1,2\r\n\r\n3,4\n\n",
	};
	struct csv_table t;
	struct csv_error e;

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		ck_assert_int_eq(table(same[i], &t, &e), KV_OK);
		ck_assert_uint_eq(t.ncol, 2);
		ck_assert_uint_eq(t.nrow, 2);
		ck_assert_str_eq(t.head[0], "a");
		ck_assert_str_eq(t.row[0][1], "2");
		ck_assert_str_eq(t.row[1][0], "3");
		ck_assert_str_eq(t.row[1][1], "4");
		ck_assert(t.terminated == (same[i][strlen(same[i]) - 1] ==
					   '\n'));
		csv_table_release(&t);
	}
	/* a CR not followed by LF is data, but for one that ends the file */
	ck_assert_int_eq(table("a,b\n1\r2,3\r\r", &t, &e), KV_OK);
	ck_assert_str_eq(t.row[0][0], "1\r2");
	ck_assert_str_eq(t.row[0][1], "3\r");
	ck_assert(t.terminated);
	csv_table_release(&t);
	ck_assert_int_eq(table("a,\"b\"\r", &t, &e), KV_OK);
	ck_assert_str_eq(t.head[1], "b");
	csv_table_release(&t);
	/* a last empty field, with and without a line end */
	ck_assert_int_eq(table("a,b\n1,", &t, &e), KV_OK);
	ck_assert_uint_eq(t.nrow, 1);
	ck_assert_str_eq(t.row[0][1], "");
	csv_table_release(&t);
	ck_assert_int_eq(table("a,b\n1,\n", &t, &e), KV_OK);
	ck_assert_str_eq(t.row[0][1], "");
	csv_table_release(&t);
	/* a header alone */
	ck_assert_int_eq(table("a,b", &t, &e), KV_OK);
	ck_assert_uint_eq(t.nrow, 0);
	ck_assert(!t.terminated);
	csv_table_release(&t);
}
END_TEST

static const struct {
	const char *text;
	enum csv_errkind kind;
	unsigned long line, col, record;
} bad[] = {
	{ "", CSV_EEMPTY, 1, 1, 1 },
	{ "\n", CSV_EEMPTY, 1, 1, 1 },
	{ "\r\n\n\r\n", CSV_EEMPTY, 1, 1, 1 },
	{ "a,b\n1,2,3\n", CSV_EWIDTH, 2, 1, 2 },
	{ "a,b\n1,2\n\n1\n", CSV_EWIDTH, 4, 1, 4 },
	{ "a,b\n1,\"x\ny\",3\n", CSV_EWIDTH, 2, 1, 2 },
	{ "a,b\n1,\"2\n", CSV_EUNTERMINATED, 2, 3, 2 },
	{ "a,b\n1,\"2\"\"", CSV_EUNTERMINATED, 2, 3, 2 },
	{ "a,b\n\"x\ny\",\"2\n\n", CSV_EUNTERMINATED, 3, 4, 2 },
	{ "a,b\n\"1\"x,2\n", CSV_ETEXT_AFTER_QUOTE, 2, 4, 2 },
	{ "a,b\n1,\"a\nb\" \n", CSV_ETEXT_AFTER_QUOTE, 3, 3, 2 },
	{ "a,b\n12\"3,4\n", CSV_EQUOTE_IN_FIELD, 2, 3, 2 },
	{ "a\"b\n", CSV_EQUOTE_IN_FIELD, 1, 2, 1 },
};

START_TEST(errors)
{
	struct csv_table t;
	struct csv_error e;
	char msg[256];

	ck_assert_int_eq(table(bad[_i].text, &t, &e), KV_EINVAL);
	ck_assert_int_eq(e.kind, bad[_i].kind);
	ck_assert_uint_eq(e.line, bad[_i].line);
	ck_assert_uint_eq(e.col, bad[_i].col);
	ck_assert_uint_eq(e.record, bad[_i].record);
	ck_assert_uint_eq(t.nrow, 0);
	ck_assert_ptr_null(t.path);
	csv_table_release(&t);
	csv_error_format(&e, "f.csv", msg, sizeof(msg));
	snprintf(msg + 64, sizeof(msg) - 64, "f.csv:%lu:%lu: %s",
		 bad[_i].line, bad[_i].col, csv_what(bad[_i].kind));
	ck_assert_int_eq(strncmp(msg, msg + 64, strlen(msg + 64)), 0);
}
END_TEST

START_TEST(width_message)
{
	struct csv_table t;
	struct csv_error e;
	char msg[128];

	ck_assert_int_eq(table("a,b\n1,2\n1,2,3\n", &t, &e), KV_EINVAL);
	ck_assert_uint_eq(e.nfield, 3);
	ck_assert_uint_eq(e.nhead, 2);
	csv_error_format(&e, "f.csv", msg, sizeof(msg));
	ck_assert_str_eq(msg, "f.csv:3:1: wrong number of fields (3, the "
			 "header has 2)");
}
END_TEST

START_TEST(missing_file)
{
	struct csv_table t;
	struct csv c;
	struct csv_error e;
	char msg[256];

	ck_assert_int_eq(csv_table_read(&t, "/nonexistent/x.csv", &e),
			 KV_ENOENT);
	ck_assert_int_eq(e.kind, CSV_EOPEN);
	ck_assert_int_eq(e.sys_errno, ENOENT);
	csv_error_format(&e, "/nonexistent/x.csv", msg, sizeof(msg));
	ck_assert_str_eq(msg, "/nonexistent/x.csv: No such file or directory");
	ck_assert_int_eq(csv_open(&c, "/nonexistent/x.csv", &e), KV_ENOENT);
	csv_close(&c);
	csv_close(NULL);
	csv_table_release(NULL);
}
END_TEST

START_TEST(directory)
{
	struct csv c;
	struct csv_error e;

	ck_assert_int_eq(csv_open(&c, "/", &e), KV_EINVAL);
	ck_assert_int_eq(e.kind, CSV_EREAD);
	ck_assert_int_eq(e.sys_errno, EISDIR);
}
END_TEST

/*
 * A header naming a column twice is refused, table and stream alike: the
 * leftmost repeat (not the first name to repeat in sorted order), at its
 * own line and column, with the first one's column; empty names may
 * repeat (no lookup asks for them).
 */
START_TEST(duplicate_column)
{
	struct csv_table t;
	struct csv c;
	struct csv_error e;
	char path[512], msg[256];

	ck_assert_int_eq(table("\nz,ttft_p99_s,b,\"ttft_p99_s\",z\n5,5,1,50,2\n",
			       &t, &e), KV_EINVAL);
	ck_assert_int_eq(e.kind, CSV_EDUPCOL);
	ck_assert_uint_eq(e.line, 2);
	ck_assert_uint_eq(e.col, 16);
	ck_assert_uint_eq(e.first_col, 3);
	ck_assert_str_eq(e.name, "ttft_p99_s");
	ck_assert_ptr_null(t.path);
	csv_error_format(&e, "f.csv", msg, sizeof(msg));
	ck_assert_str_eq(msg, "f.csv:2:16: column 'ttft_p99_s' appears twice "
			 "(first at column 3)");
	/* three of a kind: the second is named */
	ck_assert_int_eq(table("a,b,a,a\n", &t, &e), KV_EINVAL);
	ck_assert_uint_eq(e.col, 5);
	ck_assert_uint_eq(e.first_col, 1);
	ck_assert_int_eq(table("a,,b,,c\n1,2,3,4,5\n", &t, &e), KV_OK);
	ck_assert_uint_eq(t.ncol, 5);
	csv_table_release(&t);
	put(path, sizeof(path), "x,y,x\n", 6);
	ck_assert_int_eq(csv_open(&c, path, &e), KV_EINVAL);
	unlink(path);
	ck_assert_int_eq(e.kind, CSV_EDUPCOL);
	ck_assert_ptr_null(c.head);
	csv_close(&c);
	ck_assert_str_eq(csv_what(CSV_EDUPCOL), "a column name appears twice");
}
END_TEST

/* Streaming: positions of fields, the header, the end. */
START_TEST(streaming)
{
	static const char text[] = "x,\"y\",z\n"
				   "10,\"a\nbc\",  7\r\n"
				   "\n"
				   ",,\n";
	char path[512];
	struct csv c;
	struct csv_error e;

	put(path, sizeof(path), text, sizeof(text) - 1);
	ck_assert_int_eq(csv_open(&c, path, &e), KV_OK);
	unlink(path);
	ck_assert_uint_eq(c.nhead, 3);
	ck_assert_str_eq(c.head[1], "y");
	ck_assert_int_eq(csv_col(&c, "z"), 2);
	ck_assert_int_eq(csv_col(&c, "w"), -1);
	ck_assert_int_eq(csv_next(&c, &e), KV_OK);
	ck_assert_uint_eq(c.nfield, 3);
	ck_assert_uint_eq(c.line, 2);
	ck_assert_str_eq(c.field[1], "a\nbc");
	ck_assert_str_eq(c.field[2], "  7");
	ck_assert_uint_eq(c.fline[1], 2);
	ck_assert_uint_eq(c.fcol[1], 4);
	ck_assert_uint_eq(c.fline[2], 3);
	ck_assert_uint_eq(c.fcol[2], 5);
	ck_assert_int_eq(csv_next(&c, &e), KV_OK);
	ck_assert_uint_eq(c.line, 5);
	ck_assert_str_eq(c.field[0], "");
	ck_assert_str_eq(c.field[2], "");
	ck_assert_uint_eq(c.fcol[2], 3);
	ck_assert_int_eq(csv_next(&c, &e), KV_OK);
	ck_assert_uint_eq(c.nfield, 0);
	ck_assert(c.terminated);
	ck_assert_int_eq(csv_next(&c, &e), KV_OK);	/* stays at the end */
	ck_assert_uint_eq(c.nfield, 0);
	csv_close(&c);
}
END_TEST

/*
 * A file of many 64 KiB chunks, with quotes and CRLF at every offset,
 * read whole and streamed: the same fields, and the lines they start on.
 */
START_TEST(chunk_edges)
{
	size_t cap = 300000, n = 0, rows = 0;
	char *text = malloc(cap), path[512];
	struct csv_table t;
	struct csv c;
	struct csv_error e;
	FILE *f;

	ck_assert_ptr_nonnull(text);
	n += (size_t)sprintf(text, "id,q,v\r\n");
	while (n < cap - 100) {
		n += (size_t)sprintf(text + n, "%zu,\"%.*s\"\"x\",%zu\r\n",
				     rows, (int)(2 * (rows % 4)),
				     "\"\"\"\"\"\"\"\"", rows * 3);
		rows++;
	}
	put(path, sizeof(path), text, n);
	ck_assert_int_eq(csv_table_read(&t, path, &e), KV_OK);
	ck_assert_uint_eq(t.nrow, rows);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(csv_init(&c, f, &e), KV_OK);
	for (size_t r = 0; r < rows; r++) {
		char want[32];

		ck_assert_int_eq(csv_next(&c, &e), KV_OK);
		ck_assert_uint_eq(c.nfield, 3);
		snprintf(want, sizeof(want), "%zu", r * 3);
		ck_assert_str_eq(c.field[2], want);
		ck_assert_str_eq(c.field[1], t.row[r][1]);
		ck_assert_uint_eq(strlen(c.field[1]), r % 4 + 2);
		ck_assert_uint_eq(c.line, r + 2);
		ck_assert_uint_eq(t.line[r], r + 2);
	}
	ck_assert_int_eq(csv_next(&c, &e), KV_OK);
	ck_assert_uint_eq(c.nfield, 0);
	csv_close(&c);
	fclose(f);
	csv_table_release(&t);
	unlink(path);
	free(text);
}
END_TEST

static Suite *
csv_suite(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("reader");

	tcase_add_test(tc, quoting);
	tcase_add_test(tc, line_ends);
	tcase_add_loop_test(tc, errors, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, width_message);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, directory);
	tcase_add_test(tc, streaming);
	tcase_add_test(tc, chunk_edges);
	tcase_add_test(tc, duplicate_column);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(csv_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
