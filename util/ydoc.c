/*
 * ydoc.c -- libyaml events to a tree of positioned nodes (ydoc.h).
 *
 * One pass over yaml_parser_parse() with an explicit stack of open
 * containers.  Each node is one allocation (the scalar text follows the
 * struct), recorded in d->mem so that yd_release() frees everything even
 * after a failure half way through.  Cost: O(bytes + keys^2 per map) -- the
 * duplicate-key check is a linear scan, fine for maps of tens of keys.
 */
#include "util/ydoc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YD_MAXDEPTH 256

static void
yd__err(char *err, size_t errlen, const char *name, unsigned long line,
	unsigned long col, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void
yd__err(char *err, size_t errlen, const char *name, unsigned long line,
	unsigned long col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (errlen == 0)
		return;
	n = snprintf(err, errlen, "%s:%lu:%lu: ", name, line, col);
	if (n < 0 || (size_t)n >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static struct yd_node *
yd__node(struct yd_doc *d, enum yd_type t, const yaml_mark_t *m,
	 const char *s, size_t len)
{
	struct yd_node *n;

	if (d->nmem == d->capmem) {
		size_t cap = d->capmem ? 2 * d->capmem : 64;
		void **p = realloc(d->mem, cap * sizeof(*p));

		if (p == NULL)
			return NULL;
		d->mem = p;
		d->capmem = cap;
	}
	n = calloc(1, sizeof(*n) + (s ? len + 1 : 0));
	if (n == NULL)
		return NULL;
	d->mem[d->nmem++] = n;
	n->type = t;
	n->line = (unsigned long)m->line + 1;
	n->col = (unsigned long)m->column + 1;
	if (s != NULL) {
		char *text = (char *)(n + 1);

		memcpy(text, s, len);
		text[len] = '\0';
		n->str = text;
	}
	return n;
}

struct yd_frame {
	struct yd_node *node;
	size_t cap;		/* allocated slots in node->kid */
	size_t used;		/* slots filled */
	bool want_key;		/* YD_MAP: the next scalar is a key */
};

static bool
yd__add(struct yd_frame *f, struct yd_node *kid)
{
	if (f->used == f->cap) {
		size_t nc = f->cap ? 2 * f->cap : 8;
		struct yd_node **p = realloc(f->node->kid, nc * sizeof(*p));

		if (p == NULL)
			return false;
		f->node->kid = p;
		f->cap = nc;
	}
	f->node->kid[f->used++] = kid;
	if (f->node->type == YD_SEQ)
		f->node->n = f->used;
	else
		f->node->n = f->used / 2;
	return true;
}

/* Mark of the scalar or container a libyaml event starts. */
static const yaml_mark_t *
yd__mark(const yaml_event_t *e)
{
	return &e->start_mark;
}

kv_err
yd_load(struct yd_doc *d, FILE *in, const char *name, char *err,
	size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t e;
	struct yd_frame stack[YD_MAXDEPTH];
	size_t depth = 0;
	int ndocs = 0;
	kv_err rc = KV_OK;
	bool done = false;

	memset(d, 0, sizeof(*d));
	d->name = name;
	if (errlen > 0)
		err[0] = '\0';
	if (!yaml_parser_initialize(&p))
		return KV_ENOMEM;
	yaml_parser_set_input_file(&p, in);
	while (!done) {
		struct yd_node *n = NULL;
		struct yd_frame *top = depth ? &stack[depth - 1] : NULL;

		if (!yaml_parser_parse(&p, &e)) {
			if (p.error == YAML_MEMORY_ERROR) {
				rc = KV_ENOMEM;
			} else {
				const yaml_mark_t *m = &p.problem_mark;

				const yaml_mark_t *c = &p.context_mark;

				if (p.context != NULL)
					yd__err(err, errlen, name,
						(unsigned long)m->line + 1,
						(unsigned long)m->column + 1,
						"%s %s started at %lu:%lu",
						p.problem ? p.problem :
						"syntax error", p.context,
						(unsigned long)c->line + 1,
						(unsigned long)c->column + 1);
				else
					yd__err(err, errlen, name,
						(unsigned long)m->line + 1,
						(unsigned long)m->column + 1,
						"%s", p.problem ? p.problem :
						"syntax error");
				rc = KV_EINVAL;
			}
			break;
		}
		switch (e.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++ndocs > 1) {
				yd__err(err, errlen, name,
					(unsigned long)e.start_mark.line + 1,
					(unsigned long)e.start_mark.column + 1,
					"only one document per file");
				rc = KV_EINVAL;
			}
			break;
		case YAML_ALIAS_EVENT:
			yd__err(err, errlen, name,
				(unsigned long)e.start_mark.line + 1,
				(unsigned long)e.start_mark.column + 1,
				"aliases (*%s) are not supported",
				(const char *)e.data.alias.anchor);
			rc = KV_EINVAL;
			break;
		case YAML_SCALAR_EVENT:
			n = yd__node(d, YD_SCALAR, yd__mark(&e),
				     (const char *)e.data.scalar.value,
				     e.data.scalar.length);
			if (n == NULL) {
				rc = KV_ENOMEM;
				break;
			}
			n->plain = e.data.scalar.style ==
				   YAML_PLAIN_SCALAR_STYLE;
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			if (depth == YD_MAXDEPTH) {
				yd__err(err, errlen, name,
					(unsigned long)e.start_mark.line + 1,
					(unsigned long)e.start_mark.column + 1,
					"nesting deeper than %d levels",
					YD_MAXDEPTH);
				rc = KV_EINVAL;
				break;
			}
			if (top != NULL && top->node->type == YD_MAP &&
			    top->want_key) {
				yd__err(err, errlen, name,
					(unsigned long)e.start_mark.line + 1,
					(unsigned long)e.start_mark.column + 1,
					"a key must be a plain value");
				rc = KV_EINVAL;
				break;
			}
			n = yd__node(d, e.type == YAML_MAPPING_START_EVENT ?
				     YD_MAP : YD_SEQ, yd__mark(&e), NULL, 0);
			if (n == NULL)
				rc = KV_ENOMEM;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			depth--;
			/* the container is complete: attach it as a value */
			n = stack[depth].node;
			top = depth ? &stack[depth - 1] : NULL;
			if (top == NULL) {
				d->root = n;
			} else {
				if (!yd__add(top, n)) {
					rc = KV_ENOMEM;
					break;
				}
				if (top->node->type == YD_MAP)
					top->want_key = true;
			}
			n = NULL;
			break;
		default:
			break;
		}
		if (rc == KV_OK && n != NULL) {
			if (n->type != YD_SCALAR) {
				stack[depth].node = n;
				stack[depth].cap = 0;
				stack[depth].used = 0;
				stack[depth].want_key = n->type == YD_MAP;
				depth++;
			} else if (top == NULL) {
				d->root = n;
			} else if (top->node->type == YD_MAP && top->want_key) {
				for (size_t i = 0; i < top->node->n; i++) {
					if (strcmp(top->node->kid[2 * i]->str,
						   n->str) == 0) {
						yd__err(err, errlen, name,
							n->line, n->col,
							"duplicate key '%s'",
							n->str);
						rc = KV_EINVAL;
						break;
					}
				}
				if (rc == KV_OK && !yd__add(top, n))
					rc = KV_ENOMEM;
				top->want_key = false;
			} else {
				if (!yd__add(top, n))
					rc = KV_ENOMEM;
				if (top->node->type == YD_MAP)
					top->want_key = true;
			}
		}
		yaml_event_delete(&e);
		if (rc != KV_OK)
			break;
	}
	yaml_parser_delete(&p);
	if (rc != KV_OK)
		yd_release(d);
	return rc;
}

kv_err
yd_load_path(struct yd_doc *d, const char *path, char *err, size_t errlen)
{
	FILE *in = fopen(path, "r");
	kv_err rc;

	if (in == NULL) {
		memset(d, 0, sizeof(*d));
		if (errlen > 0)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_ENOENT;
	}
	rc = yd_load(d, in, path, err, errlen);
	fclose(in);
	return rc;
}

void
yd_release(struct yd_doc *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nmem; i++) {
		struct yd_node *n = d->mem[i];

		free(n->kid);
		free(n);
	}
	free(d->mem);
	d->mem = NULL;
	d->nmem = d->capmem = 0;
	d->root = NULL;
}

const struct yd_node *
yd_get(const struct yd_node *map, const char *key)
{
	if (map == NULL || map->type != YD_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->kid[2 * i]->str, key) == 0)
			return map->kid[2 * i + 1];
	return NULL;
}

const struct yd_node *
yd_key(const struct yd_node *map, size_t i)
{
	return map != NULL && map->type == YD_MAP && i < map->n ?
	       map->kid[2 * i] : NULL;
}

const struct yd_node *
yd_val(const struct yd_node *map, size_t i)
{
	return map != NULL && map->type == YD_MAP && i < map->n ?
	       map->kid[2 * i + 1] : NULL;
}

bool
yd_is_null(const struct yd_node *n)
{
	if (n == NULL || n->type != YD_SCALAR || !n->plain)
		return false;
	return n->str[0] == '\0' || strcmp(n->str, "~") == 0 ||
	       strcmp(n->str, "null") == 0 || strcmp(n->str, "Null") == 0 ||
	       strcmp(n->str, "NULL") == 0;
}
