/*
 * wl_parse.c -- numbers, times and CSV fields, without strtol/sscanf on
 * the hot path (fields are not NUL-terminated and parsing is most of a
 * reader's cost).
 *
 * Times are converted to integer nanoseconds exactly from their decimal
 * text: "5.8926549999999995" s is 5,892,655,000 ns (half up at the 10th
 * fractional digit), never a double rounded twice.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
trim(const char **p, size_t *n)
{
	while (*n > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

enum wl_num
wl__parse_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	trim(&p, &n);
	if (n > 0 && *p == '+') {
		p++;
		n--;
	}
	if (n > 0 && *p == '-')
		return WL_NUM_NEG;
	if (n == 0)
		return WL_NUM_BAD;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)p[i] - '0';

		if (d > 9)
			return WL_NUM_BAD;
		/* 19 digits cannot overflow; check only beyond that. */
		if (i >= 19 && v > (UINT64_MAX - d) / 10)
			return WL_NUM_HUGE;
		v = v * 10 + d;
	}
	*out = v;
	return WL_NUM_OK;
}

enum wl_num
wl__parse_i64(const char *p, size_t n, int64_t *out)
{
	bool neg = false;
	uint64_t v;
	enum wl_num rc;

	trim(&p, &n);
	if (n > 0 && *p == '-') {
		neg = true;
		p++;
		n--;
		if (n > 0 && (*p == '-' || *p == '+'))
			return WL_NUM_BAD;
	}
	rc = wl__parse_u64(p, n, &v);
	if (rc != WL_NUM_OK)
		return rc;
	if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return WL_NUM_HUGE;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return WL_NUM_OK;
}

enum wl_num
wl__parse_len(const char *p, size_t n, uint32_t *out)
{
	uint64_t v;
	enum wl_num rc;

	trim(&p, &n);
	if (n > 0 && *p == '-') {
		/* "-" followed by digits is a negative number; else junk. */
		if (n > 1 && WL_ISDIGIT(p[1]) &&
		    wl__parse_u64(p + 1, n - 1, &v) != WL_NUM_BAD)
			return WL_NUM_NEG;
		return WL_NUM_BAD;
	}
	rc = wl__parse_u64(p, n, &v);
	if (rc != WL_NUM_OK)
		return rc;
	if (v >= (uint64_t)1 << 31)
		return WL_NUM_HUGE;
	*out = (uint32_t)v;
	return WL_NUM_OK;
}

enum wl_num
wl__parse_double(const char *p, size_t n, double *out)
{
	char tmp[64];
	char *end;
	double v;

	trim(&p, &n);
	if (n == 0 || n >= sizeof(tmp))
		return WL_NUM_BAD;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	v = strtod(tmp, &end);
	if (*end != '\0' || !isfinite(v))
		return WL_NUM_BAD;
	*out = v;
	return WL_NUM_OK;
}

enum wl_num
wl__parse_time(const char *p, size_t n, int64_t unit_ns, int64_t *out)
{
	uint64_t ip = 0, fp = 0, scale = 1;
	unsigned udig = 0;
	size_t i = 0;
	bool any = false, round_up = false;

	trim(&p, &n);
	if (n > 0 && *p == '-') {
		double v;

		if (wl__parse_double(p, n, &v) == WL_NUM_OK)
			return v == 0 ? WL_NUM_BAD : WL_NUM_NEG;
		return WL_NUM_BAD;
	}
	for (int64_t u = unit_ns; u > 1; u /= 10)
		udig++;
	for (; i < n && WL_ISDIGIT(p[i]); i++) {
		if (ip > UINT64_MAX / 10 - 10)
			return WL_NUM_HUGE;
		ip = ip * 10 + (unsigned)(p[i] - '0');
		any = true;
	}
	if (i < n && p[i] == '.') {
		unsigned k = 0;

		for (i++; i < n && WL_ISDIGIT(p[i]); i++, k++) {
			any = true;
			if (k < udig) {
				fp = fp * 10 + (unsigned)(p[i] - '0');
				scale *= 10;
			} else if (k == udig) {
				round_up = p[i] >= '5';
			}
		}
	}
	if (!any)
		return WL_NUM_BAD;
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		double v;

		if (wl__parse_double(p, n, &v) != WL_NUM_OK)
			return WL_NUM_BAD;
		v *= (double)unit_ns;
		if (v < 0)
			return WL_NUM_NEG;
		if (v >= 9.2e18)
			return WL_NUM_HUGE;
		*out = (int64_t)llround(v);
		return WL_NUM_OK;
	}
	if (i != n)
		return WL_NUM_BAD;
	if (ip > (uint64_t)INT64_MAX / (uint64_t)unit_ns - 1)
		return WL_NUM_HUGE;
	/* fp has `scale` as its denominator, scale <= 10^udig. */
	{
		uint64_t frac_ns = fp * ((uint64_t)unit_ns / scale);

		*out = (int64_t)(ip * (uint64_t)unit_ns + frac_ns +
		    (round_up ? 1 : 0));
	}
	return WL_NUM_OK;
}

int64_t
wl__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* Howard Hinnant's algorithm, proleptic Gregorian calendar. */
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void
wl__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool
digits(const char *p, int n, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < n; i++) {
		unsigned d = (unsigned char)p[i] - '0';

		if (d > 9)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool
leap_year(unsigned y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/* The calendar and clock fields in range (a leap second only at 23:59). */
static bool
civil_ok(unsigned y, unsigned mo, unsigned d, unsigned h, unsigned mi,
    unsigned s)
{
	static const unsigned mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30,
		31, 30, 31 };

	if (mo < 1 || mo > 12 || d < 1)
		return false;
	if (d > mdays[mo - 1] + (mo == 2 && leap_year(y) ? 1u : 0u))
		return false;
	return h <= 23 && mi <= 59 &&
	    (s <= 59 || (s == 60 && h == 23 && mi == 59));
}

/*
 * secs * 10^9 + frac (0 <= frac < 10^9) into *out, if it fits in int64.
 * INT64_MAX is 9223372036 s + 854775807 ns, INT64_MIN -9223372037 s +
 * 145224192 ns; a negative count is formed as (secs + 1) * 10^9 +
 * (frac - 10^9) so no intermediate leaves the range.
 */
static bool
ns_of(int64_t secs, int64_t frac, int64_t *out)
{
	const int64_t g = 1000000000;

	if (secs >= 0) {
		if (secs > INT64_MAX / g ||
		    (secs == INT64_MAX / g && frac > INT64_MAX % g))
			return false;
		*out = secs * g + frac;
		return true;
	}
	if (secs < INT64_MIN / g - 1 ||
	    (secs == INT64_MIN / g - 1 && frac < g + INT64_MIN % g))
		return false;
	*out = (secs + 1) * g + (frac - g);
	return true;
}

bool
wl__datetime_quick(const char *p, size_t n, int64_t *out)
{
	static const uint32_t scale[] = { 1, 100000000, 10000000, 1000000,
		100000, 10000, 1000, 100, 10, 1 };
	unsigned y, mo, d, h, mi, s;
	uint32_t frac = 0;

	if (n < 19 || n == 20 || n > 29 || p[4] != '-' || p[7] != '-' ||
	    (p[10] != ' ' && p[10] != 'T') || p[13] != ':' || p[16] != ':' ||
	    (n > 19 && p[19] != '.'))
		return false;
	if (!digits(p, 4, &y) || !digits(p + 5, 2, &mo) ||
	    !digits(p + 8, 2, &d) || !digits(p + 11, 2, &h) ||
	    !digits(p + 14, 2, &mi) || !digits(p + 17, 2, &s) ||
	    !civil_ok(y, mo, d, h, mi, s))
		return false;
	for (size_t i = 20; i < n; i++) {
		unsigned c = (unsigned char)p[i] - '0';

		if (c > 9)
			return false;
		frac = frac * 10 + c;
	}
	/* 1 to 9 digits: to the ns exactly, wl__parse_datetime's sum */
	return ns_of(wl__days_from_civil(y, mo, d) * 86400 +
		     (int64_t)h * 3600 + (int64_t)mi * 60 + s,
		     (int64_t)frac * scale[n > 19 ? n - 20 : 0], out);
}

enum wl_num
wl__parse_datetime(const char *p, size_t n, int64_t *out)
{
	unsigned y, mo, d, h, mi, s;
	int64_t frac = 0, secs;

	trim(&p, &n);
	if (n < 19 || p[4] != '-' || p[7] != '-' ||
	    (p[10] != ' ' && p[10] != 'T') || p[13] != ':' || p[16] != ':')
		return WL_NUM_BAD;
	if (!digits(p, 4, &y) || !digits(p + 5, 2, &mo) ||
	    !digits(p + 8, 2, &d) || !digits(p + 11, 2, &h) ||
	    !digits(p + 14, 2, &mi) || !digits(p + 17, 2, &s))
		return WL_NUM_BAD;
	if (!civil_ok(y, mo, d, h, mi, s))
		return WL_NUM_BAD;
	if (n > 19) {
		/* '.' and digits only: no sign, no exponent. */
		if (p[19] != '.' || n == 20)
			return WL_NUM_BAD;
		for (size_t i = 20; i < n; i++)
			if (!WL_ISDIGIT(p[i]))
				return WL_NUM_BAD;
		if (n <= 29) {	/* to the ns: exact, wl__parse_time's sum */
			int64_t scale = 1000000000;

			for (size_t i = 20; i < n; i++) {
				frac = frac * 10 + (p[i] - '0');
				scale /= 10;
			}
			frac *= scale;
		} else if (wl__parse_time(p + 19, n - 19, 1000000000,
					  &frac) != WL_NUM_OK) {
			return WL_NUM_BAD;
		}
	}
	/* 4-digit years: |secs| < 2^39, no overflow before ns_of. */
	secs = wl__days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 +
	    (int64_t)mi * 60 + s;
	if (frac >= 1000000000) {	/* .9999999995 rounds up */
		secs++;
		frac -= 1000000000;
	}
	return ns_of(secs, frac, out) ? WL_NUM_OK : WL_NUM_HUGE;
}

void
wl__format_datetime(int64_t ns, char *buf, size_t size)
{
	const int64_t g = 1000000000;
	int64_t s = ns / g, f = ns % g, days, sod, y;
	unsigned m, d;

	/* floor division in two steps: nothing here can overflow */
	if (f < 0) {
		s--;
		f += g;
	}
	days = s / 86400;
	sod = s % 86400;
	if (sod < 0) {
		days--;
		sod += 86400;
	}
	wl__civil_from_days(days, &y, &m, &d);
	if (f == 0)
		snprintf(buf, size, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d",
		    y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
		    (int)(sod % 60));
	else
		snprintf(buf, size, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d."
		    "%09" PRId64, y, m, d, (int)(sod / 3600),
		    (int)(sod / 60 % 60), (int)(sod % 60), f);
}

bool
wl__csv_quick(const char *line, size_t len, const uint8_t *kind, int ncols,
    struct wl_quick *q)
{
	const char *p = line, *end = line + len;

	for (int i = 0; i < ncols; i++) {
		const char *f = p, *stop;
		uint32_t v = 0;

		if (kind[i] == WL_Q_COUNT0 || kind[i] == WL_Q_COUNT1) {
			while (p < end && WL_ISDIGIT(*p) && p - f < 10)
				v = v * 10 + (uint32_t)(*p++ - '0');
			if (p == f || p - f > 9)
				return false;
			q->count[kind[i] - WL_Q_COUNT0] = v;
			q->ccol[kind[i] - WL_Q_COUNT0] =
			    (uint32_t)(f - line) + 1;
			stop = p;
		} else {
			stop = memchr(p, ',', (size_t)(end - p));
			if (stop == NULL)
				stop = end;
			if (memchr(p, '"', (size_t)(stop - p)) != NULL ||
			    (kind[i] == WL_Q_TIME &&
			    !wl__datetime_quick(p, (size_t)(stop - p), &q->t)))
				return false;
			if (kind[i] == WL_Q_TIME)
				q->tcol = (uint32_t)(p - line) + 1;
		}
		/* a comma after each field but the last, which ends it */
		if (i + 1 < ncols ? stop == end || *stop != ',' : stop != end)
			return false;
		p = stop + 1;
	}
	return true;
}

int
wl__csv_split(const char *line, size_t len, struct wl_field *f, int max)
{
	const char *p = line, *end = line + len;
	int k = 0;

	if (memchr(line, '"', len) == NULL) {
		/* Fast path: no quotes anywhere. */
		for (;;) {
			const char *c = memchr(p, ',', (size_t)(end - p));
			const char *stop = c != NULL ? c : end;

			if (k < max) {
				f[k].p = p;
				f[k].n = (size_t)(stop - p);
				f[k].col = (uint32_t)(p - line) + 1;
				f[k].quoted = false;
			}
			k++;
			if (c == NULL)
				return k;
			p = c + 1;
		}
	}
	for (;;) {
		const char *start = p;

		if (p < end && *p == '"') {
			const char *q = p + 1;

			for (;;) {
				q = memchr(q, '"', (size_t)(end - q));
				if (q == NULL)
					return -1;
				if (q + 1 < end && q[1] == '"') {
					q += 2;
					continue;
				}
				break;
			}
			if (k < max) {
				f[k].p = p + 1;
				f[k].n = (size_t)(q - p - 1);
				f[k].col = (uint32_t)(start - line) + 1;
				f[k].quoted = true;
			}
			p = q + 1;
			/* Skip junk between the closing quote and ','. */
			while (p < end && *p != ',')
				p++;
		} else {
			const char *c = memchr(p, ',', (size_t)(end - p));

			p = c != NULL ? c : end;
			if (k < max) {
				f[k].p = start;
				f[k].n = (size_t)(p - start);
				f[k].col = (uint32_t)(start - line) + 1;
				f[k].quoted = false;
			}
		}
		k++;
		if (p >= end)
			return k;
		p++;	/* the comma */
	}
}
