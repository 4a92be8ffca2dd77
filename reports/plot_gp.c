/*
 * plot_gp.c -- writing the output: folders, files under a temporary name
 * then renamed, the frame of every gnuplot script, and running one
 * gnuplot process over all the scripts (found on PATH; its images are
 * written under temporary names and renamed only when it exits 0 and every
 * image is whole: a PNG up to its IEND chunk, an SVG up to </svg>, since
 * gnuplot exits 0 on a full disk).
 */
#define _XOPEN_SOURCE 700	/* fork(), execv(), waitpid() */

#include "config.h"

#include "reports/plot_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int
plot__mkdir_p(struct ctx *c, const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	if (strlen(dir) >= sizeof(p))
		return plot__fail(c, PLOT_EFAIL, "%s: name too long", dir);
	strcpy(p, dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char ch = *s;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			return plot__fail(c, PLOT_EFAIL, "%s: %s", p,
					  strerror(errno));
		*s = ch;
		if (!ch)
			break;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return plot__fail(c, PLOT_EFAIL, "%s: not a folder", dir);
	return PLOT_OK;
}

/* out/name <- b, through a temporary name. */
int
plot__write_file(struct ctx *c, const char *name, const struct buf *b)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 96];

	if (b->oom)
		return plot__oom(c);
	if (c->dry)
		return PLOT_OK;
	snprintf(path, sizeof(path), "%s/%s", c->out, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", c->out, name, c->pid);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return plot__fail(c, PLOT_EFAIL, "%s: %s", tmp,
				  strerror(errno));
	size_t n = b->n ? fwrite(b->p, 1, b->n, f) : 0;
	int err = n != b->n || ferror(f);
	if (fclose(f) != 0 || err) {
		int e = errno;
		unlink(tmp);
		return plot__fail(c, PLOT_EFAIL, "%s: %s", tmp, strerror(e));
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return plot__fail(c, PLOT_EFAIL, "%s: %s", path, strerror(e));
	}
	return PLOT_OK;
}

/* rel <- the path of `to` seen from `from` (both absolute), "" when they
 * are the same folder, else ending with '/'. */
void
plot__rel_path(const char *from, const char *to, char *rel, size_t len)
{
	size_t i = 0, common = 0;
	struct buf b = { 0 };

	while (from[i] && from[i] == to[i]) {
		if (from[i] == '/')
			common = i;
		i++;
	}
	if (from[i] == '\0' && (to[i] == '/' || to[i] == '\0'))
		common = i;
	else if (to[i] == '\0' && from[i] == '/')
		common = i;
	for (const char *s = from + common; *s; s++)
		if (*s == '/' && s[1])
			plot__buf_puts(&b, "../");
	if (to[common] == '/' && to[common + 1]) {
		plot__buf_puts(&b, to + common + 1);
		plot__buf_puts(&b, "/");
	}
	snprintf(rel, len, "%s", b.p && !b.oom ? b.p : "");
	plot__buf_release(&b);
}

struct plot *
plot__add_plot(struct ctx *c, const char *name, const char *heading)
{
	if (c->nplots == c->plotcap) {
		size_t cap = c->plotcap ? 2 * c->plotcap : 16;
		struct plot *p = realloc(c->plots, cap * sizeof(*p));
		if (!p)
			return NULL;
		c->plots = p;
		c->plotcap = cap;
	}
	struct plot *p = &c->plots[c->nplots++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->heading, sizeof(p->heading), "%s", heading);
	return p;
}

void
plot__file(struct plot *p, const char *file)
{
	if (p->nfiles < PLOT_MAX_FILES)
		snprintf(p->files[p->nfiles++], sizeof(p->files[0]), "%s",
			 file);
}

/* The top of every script. */
void
plot__gp_begin(struct ctx *c, struct buf *b, const struct plot *p)
{
	plot__buf_printf(b, "# %s.gp -- %s (kvsim plot).\n", p->name,
			 p->heading);
	plot__buf_printf(b, "# Rerun in this folder: gnuplot %s.gp\n"
		   "# One format only: gnuplot -e \"formats='svg'\" %s.gp\n"
		   "# (suffix, when set, is appended to the image names.)\n",
		   p->name, p->name);
	plot__buf_puts(b, "reset\n"
		       "if (!exists('formats')) formats = 'png svg'\n"
		       "if (!exists('suffix')) suffix = ''\n"
		       "set datafile separator ','\n"
		       "set datafile columnheaders\n"
		       "set grid\n"
		       "set title ");
	struct buf t = { 0 };
	if (c->o->title && *c->o->title)
		plot__buf_printf(&t, "%s: ", c->o->title);
	plot__buf_puts(&t, p->heading);
	plot__gp_str(b, t.oom ? "" : t.p);
	plot__buf_release(&t);
	plot__buf_puts(b, "\n");
}

/* The render loop around a plot command (lines joined by ", \\\n"). */
void
plot__gp_end(struct buf *b, const struct plot *p, const char *plot)
{
	plot__buf_puts(b, "do for [f in formats] {\n"
	    "\tif (f eq 'png') { set terminal pngcairo size 960,600 "
	    "noenhanced font ',11' }\n"
	    "\tif (f eq 'svg') { set terminal svg size 960,600 noenhanced "
	    "font 'sans,11' background '#ffffff' }\n"
	    "\tif (f ne 'png' && f ne 'svg') { print 'unknown format: '.f; "
	    "continue }\n");
	plot__buf_printf(b, "\tset output '%s.'.f.suffix\n", p->name);
	plot__buf_printf(b, "\tplot %s\n", plot);
	plot__buf_puts(b, "\tunset output\n}\n");
}

/* A per-folder plot's name and heading: NAME_I and "HEADING: label"
 * when there are several folders. */
struct plot *
plot__add_run_plot(struct ctx *c, size_t i, const char *name,
		   const char *heading)
{
	char n[64], h[256];
	if (c->nruns > 1) {
		snprintf(n, sizeof(n), "%s_%zu", name, i + 1);
		snprintf(h, sizeof(h), "%s: %s", heading, c->runs[i].label);
	} else {
		snprintf(n, sizeof(n), "%s", name);
		snprintf(h, sizeof(h), "%s", heading);
	}
	return plot__add_plot(c, n, h);
}

int
plot__finish_plot(struct ctx *c, struct plot *p, struct buf *gp)
{
	char name[80];
	snprintf(name, sizeof(name), "%s.gp", p->name);
	int rc = plot__write_file(c, name, gp);
	plot__buf_release(gp);
	return rc;
}

/* The path of an executable gnuplot on PATH into buf; false if none. */
bool
plot__find_gnuplot(char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	while (*path) {
		size_t n = strcspn(path, ":");
		int w = snprintf(buf, len, "%.*s%sgnuplot", (int)n, path,
				 n ? "/" : "./");
		struct stat st;
		if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

bool
plot_have_gnuplot(void)
{
	char p[PATH_MAX];
	return plot__find_gnuplot(p, sizeof(p));
}

static void
image_name(const struct ctx *c, const struct plot *p, const char *fmt,
	   bool tmp, char *buf, size_t len)
{
	if (tmp)
		snprintf(buf, len, "%s/%s.%s.tmp.%ld", c->out, p->name, fmt,
			 c->pid);
	else
		snprintf(buf, len, "%s/%s.%s", c->out, p->name, fmt);
}

static void
unlink_images(const struct ctx *c, const char *const *fmts, size_t nf)
{
	char path[PATH_MAX + 128];
	for (size_t k = 0; k < c->nplots; k++)
		for (size_t f = 0; f < nf; f++) {
			image_name(c, &c->plots[k], fmts[f], true, path,
				   sizeof(path));
			unlink(path);
		}
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/*
 * Whether f is a whole PNG: the signature, then chunks whose lengths lead
 * from one to the next, up to an IEND chunk (length 0, its fixed CRC)
 * that ends the file.  NULL, or what is wrong.
 */
static const char *
png_whole(FILE *f)
{
	static const unsigned char sig[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
	};
	static const unsigned char iend_crc[4] = { 0xae, 0x42, 0x60, 0x82 };
	unsigned char h[8];

	if (fread(h, 1, 8, f) != 8 || memcmp(h, sig, 8) != 0)
		return "no PNG signature";
	for (;;) {
		uint32_t len;

		if (fread(h, 1, 8, f) != 8)
			return "it ends inside its chunks, before IEND";
		len = be32(h);
		if (len > 0x7fffffffu)
			return "a chunk length out of range";
		if (memcmp(h + 4, "IEND", 4) == 0) {
			if (len != 0 || fread(h, 1, 4, f) != 4 ||
			    memcmp(h, iend_crc, 4) != 0)
				return "a broken IEND chunk";
			if (fgetc(f) != EOF)
				return "bytes after its IEND chunk";
			return ferror(f) ? "a read error" : NULL;
		}
		if (fseek(f, (long)len + 4, SEEK_CUR) != 0)
			return "a read error";
	}
}

/* Whether f is a whole SVG: it opens with an XML declaration or <svg and
 * ends with </svg> (then white space only).  NULL, or what is wrong. */
static const char *
svg_whole(FILE *f)
{
	char b[64];
	size_t n;
	long size;

	if ((n = fread(b, 1, 5, f)) != 5 ||
	    (memcmp(b, "<?xml", 5) != 0 && memcmp(b, "<svg", 4) != 0))
		return "no XML declaration or <svg> at its start";
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0)
		return "a read error";
	n = size < (long)sizeof(b) ? (size_t)size : sizeof(b);
	if (fseek(f, size - (long)n, SEEK_SET) != 0 || fread(b, 1, n, f) != n)
		return "a read error";
	while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r' ||
			 b[n - 1] == ' ' || b[n - 1] == '\t'))
		n--;
	if (n < 6 || memcmp(b + n - 6, "</svg>", 6) != 0)
		return "it does not end with </svg>";
	return NULL;
}

/* Whether gnuplot wrote the image at path whole (a full disk leaves a
 * truncated file and gnuplot still exits 0); else a message in c. */
static int
image_check(struct ctx *c, const char *path, const char *fmt,
	    const char *fin)
{
	FILE *f = fopen(path, "rb");
	const char *bad;

	if (f == NULL)
		return plot__fail(c, PLOT_EFAIL, "gnuplot wrote no %s", fin);
	bad = strcmp(fmt, "png") == 0 ? png_whole(f) : svg_whole(f);
	fclose(f);
	if (bad != NULL)
		return plot__fail(c, PLOT_EFAIL, "gnuplot wrote an incomplete "
				  "%s (%s; is the disk full?)", fin, bad);
	return PLOT_OK;
}

/* Check every image, then rename them all: an earlier image stays as it
 * was unless every new one is whole. */
static int
images_commit(struct ctx *c, const char *const *fmts, size_t nf)
{
	char tmp[PATH_MAX + 128], fin[PATH_MAX + 128];
	int rc;

	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < c->nplots; k++)
			for (size_t f = 0; f < nf; f++) {
				image_name(c, &c->plots[k], fmts[f], true, tmp,
					   sizeof(tmp));
				image_name(c, &c->plots[k], fmts[f], false,
					   fin, sizeof(fin));
				if (pass == 0 && (rc = image_check(c, tmp,
				    fmts[f], fin)) != PLOT_OK)
					return rc;
				if (pass == 1 && rename(tmp, fin) != 0)
					return plot__fail(c, PLOT_EFAIL,
							  "%s: %s", fin,
							  strerror(errno));
			}
	return PLOT_OK;
}

int
plot__render(struct ctx *c, const char *gnuplot)
{
	const char *fmts[2];
	size_t nf = 0;
	unsigned fm = c->o->formats ? c->o->formats : PLOT_PNG | PLOT_SVG;
	char expr[128];
	int rc = PLOT_OK;

	if (fm & PLOT_PNG)
		fmts[nf++] = "png";
	if (fm & PLOT_SVG)
		fmts[nf++] = "svg";
	snprintf(expr, sizeof(expr), "formats='%s%s%s'; suffix='.tmp.%ld'",
		 fmts[0], nf > 1 ? " " : "", nf > 1 ? fmts[1] : "", c->pid);
	char **argv = calloc(c->nplots + 4, sizeof(*argv));
	if (!argv)
		return plot__oom(c);
	argv[0] = "gnuplot";
	argv[1] = "-e";
	argv[2] = expr;
	for (size_t k = 0; k < c->nplots; k++) {
		argv[3 + k] = malloc(sizeof(c->plots[k].name) + 4);
		if (!argv[3 + k]) {
			rc = plot__oom(c);
			goto out;
		}
		snprintf(argv[3 + k], sizeof(c->plots[k].name) + 4, "%s.gp",
			 c->plots[k].name);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		rc = plot__fail(c, PLOT_EFAIL, "cannot start gnuplot: %s",
				strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* gnuplot's messages to stderr, nothing on our stdout */
		if (chdir(c->out) != 0 || dup2(2, 1) < 0)
			_exit(127);
		execv(gnuplot, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			rc = plot__fail(c, PLOT_EFAIL, "gnuplot: %s",
					strerror(errno));
			goto out;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		rc = plot__fail(c, PLOT_EFAIL,
				"%s failed (%s %d) on the scripts in %s",
				gnuplot,
				WIFEXITED(st) ? "exit status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				c->out);
		goto out;
	}
	rc = images_commit(c, fmts, nf);
out:
	if (rc != PLOT_OK)
		unlink_images(c, fmts, nf);
	for (size_t k = 0; k < c->nplots; k++)
		free(argv[3 + k]);
	free(argv);
	return rc;
}
