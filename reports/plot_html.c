/*
 * plot_html.c -- index.html: every image with links to its script and
 * data, and the tables of summary.csv (one column per run), capacity.csv
 * and compare.csv.
 */
#include "config.h"

#include "reports/plot_int.h"

static void
html_table(struct buf *b, const struct csv_table *t)
{
	plot__buf_puts(b, "<table>\n<tr>");
	for (size_t k = 0; k < t->ncol; k++) {
		plot__buf_puts(b, "<th>");
		plot__html_esc(b, t->head[k]);
		plot__buf_puts(b, "</th>");
	}
	plot__buf_puts(b, "</tr>\n");
	for (size_t r = 0; r < t->nrow && r < PLOT_TABLE_ROWS; r++) {
		plot__buf_puts(b, "<tr>");
		for (size_t k = 0; k < t->ncol; k++) {
			plot__buf_puts(b, "<td>");
			plot__html_esc(b, plot__cell(t, r, (int)k));
			plot__buf_puts(b, "</td>");
		}
		plot__buf_puts(b, "</tr>\n");
	}
	plot__buf_puts(b, "</table>\n");
	if (t->nrow > PLOT_TABLE_ROWS)
		plot__buf_printf(b, "<p>First %d of %zu rows.</p>\n",
				 PLOT_TABLE_ROWS, t->nrow);
}

/* summary.csv of every run: one row per column, one column per run. */
static void
html_summary(struct ctx *c, struct buf *b)
{
	size_t nsum = 0;
	for (size_t i = 0; i < c->nruns; i++)
		nsum += c->runs[i].sum.path && c->runs[i].sum.nrow;
	if (!nsum)
		return;
	plot__buf_puts(b, "<h2 id=\"summary\">Summary</h2>\n<table>\n<tr><th>"
		       "</th>");
	for (size_t i = 0; i < c->nruns; i++) {
		if (!c->runs[i].sum.path || !c->runs[i].sum.nrow)
			continue;
		plot__buf_puts(b, "<th>");
		plot__html_esc(b, c->runs[i].label);
		plot__buf_puts(b, "</th>");
	}
	plot__buf_puts(b, "</tr>\n");
	/* columns in order of first appearance over the runs */
	for (size_t i = 0; i < c->nruns; i++) {
		const struct csv_table *t = &c->runs[i].sum;
		for (size_t k = 0; t->path && t->nrow && k < t->ncol; k++) {
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = c->runs[j].sum.path &&
				       c->runs[j].sum.nrow &&
				       plot__col_of(&c->runs[j].sum,
						    t->head[k]) >= 0;
			if (seen)
				continue;
			plot__buf_puts(b, "<tr><td>");
			plot__html_esc(b, t->head[k]);
			plot__buf_puts(b, "</td>");
			for (size_t j = 0; j < c->nruns; j++) {
				const struct csv_table *u = &c->runs[j].sum;
				if (!u->path || !u->nrow)
					continue;
				int col = plot__col_of(u, t->head[k]);
				plot__buf_puts(b, "<td>");
				plot__html_esc(b, col >= 0 ?
					       plot__cell(u, 0, col) : "");
				plot__buf_puts(b, "</td>");
			}
			plot__buf_puts(b, "</tr>\n");
		}
	}
	plot__buf_puts(b, "</table>\n");
}

int
plot__write_index(struct ctx *c, bool images)
{
	struct buf b = { 0 };
	const char *title = c->o->title && *c->o->title ? c->o->title :
		"kvsim plots";
	unsigned fm = c->o->formats ? c->o->formats : PLOT_PNG | PLOT_SVG;
	const char *show = fm & PLOT_SVG ? "svg" : "png";

	plot__buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		       "<meta charset=\"utf-8\">\n<title>");
	plot__html_esc(&b, title);
	plot__buf_puts(&b, "</title>\n<style>\n"
		       "body { font-family: sans-serif; margin: 1.5em auto; "
		       "max-width: 1000px; padding: 0 1em; }\n"
		       "img { max-width: 100%; height: auto; border: 1px solid "
		       "#ddd; }\n"
		 "table { border-collapse: collapse; font-size: 0.85em; }\n"
		 "th, td { border: 1px solid #ccc; padding: 2px 6px; "
		 "text-align: right; }\n"
		 "th { background: #f2f2f2; }\n"
		 "td:first-child { text-align: left; }\n"
		 "</style>\n</head>\n<body>\n<h1>");
	plot__html_esc(&b, title);
	plot__buf_puts(&b, "</h1>\n<p>Runs:</p>\n<ul>\n");
	for (size_t i = 0; i < c->nruns; i++) {
		plot__buf_puts(&b, "<li><b>");
		plot__html_esc(&b, c->runs[i].label);
		plot__buf_puts(&b, "</b>: ");
		plot__html_esc(&b, *c->runs[i].rel ? c->runs[i].rel : "./");
		plot__buf_puts(&b, "</li>\n");
	}
	plot__buf_puts(&b, "</ul>\n");
	if (!images && c->nplots)
		plot__buf_puts(&b, "<p>Not rendered: run <code>gnuplot NAME.gp"
			 "</code> in this folder for each script below.</p>\n");
	for (size_t k = 0; k < c->nplots; k++) {
		const struct plot *p = &c->plots[k];
		plot__buf_printf(&b, "<h2 id=\"%s\">", p->name);
		plot__html_esc(&b, p->heading);
		plot__buf_puts(&b, "</h2>\n<p>");
		if (images) {
			plot__buf_printf(&b,
					 "<a href=\"%s.%s\"><img src=\"%s.%s\" "
					 "alt=\"", p->name, show, p->name,
					 show);
			plot__html_esc(&b, p->heading);
			plot__buf_puts(&b, "\"></a><br>\n");
			if (fm & PLOT_PNG)
				plot__buf_printf(&b,
				    "<a href=\"%s.png\">PNG</a> | ", p->name);
			if (fm & PLOT_SVG)
				plot__buf_printf(&b,
				    "<a href=\"%s.svg\">SVG</a> | ", p->name);
		}
		plot__buf_printf(&b, "<a href=\"%s.gp\">gnuplot script</a>",
				 p->name);
		for (size_t f = 0; f < p->nfiles; f++)
			plot__buf_printf(&b, " | <a href=\"%s\">%s</a>",
					 p->files[f], p->files[f]);
		plot__buf_puts(&b, "</p>\n");
	}
	html_summary(c, &b);
	for (size_t i = 0; i < c->nruns; i++) {
		const struct csv_table *ts[3] = { &c->runs[i].cap,
					      &c->runs[i].sweep,
					      &c->runs[i].cmp };
		const char *names[3] = { "capacity.csv", "sweep.csv",
					 "compare.csv" };
		for (int k = 0; k < 3; k++) {
			if (!ts[k]->path)
				continue;
			plot__buf_printf(&b, "<h2>%s", names[k]);
			if (c->nruns > 1) {
				plot__buf_puts(&b, ": ");
				plot__html_esc(&b, c->runs[i].label);
			}
			plot__buf_puts(&b, "</h2>\n");
			html_table(&b, ts[k]);
		}
	}
	plot__buf_puts(&b, "</body>\n</html>\n");
	int rc = plot__write_file(c, "index.html", &b);
	plot__buf_release(&b);
	return rc;
}
