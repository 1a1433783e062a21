/*
 * postproc/export/flamegraph.c: a standalone SVG flame graph, drawn the way
 * flamegraph.pl draws one, so users need no Perl script (Debian does not
 * package it).
 *
 * Decisions:
 *   - the layout is flamegraph.pl's: 1200 pixels wide, 16-pixel frames,
 *     the root ("all") at the bottom, siblings in name order, a title, a
 *     "Reset Zoom" and a "Search" button at the top and a details line
 *     at the bottom; frames narrower than 0.1 pixel are left out, as
 *     flamegraph.pl's default --minwidth does;
 *   - every frame is a <g> holding a <title> (the hover text: name,
 *     cost, share of the total), a <rect> and a <text>, so browsers show
 *     the numbers without the script and the script only adds zoom and
 *     search;
 *   - colours come from a hash of the name (the same function has the
 *     same colour everywhere), greens and blues for the program's frames
 *     and orange for the allocation functions, so where memory is
 *     requested stands out;
 *   - the script (assets/flamegraph.js) keeps each frame's
 *     original position in data attributes and rescales from those, so
 *     zooming twice never accumulates rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "assets.h"
#include "markup.h"
#include "xalloc.h"

#define WIDTH 1200.0
#define XPAD 10.0
#define FRAME_H 16 /* a frame's rect is FRAME_H - 1 high */
#define FONT 12
#define TOP_PAD (3 * FONT + 12)
#define BOTTOM_PAD (2 * FONT + 10)
#define MIN_WIDTH 0.1

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void put_colour(FILE *out, const at_flame *f, uint32_t name, bool root)
{
    uint32_t h = name_hash(f->names[name]);
    double v1 = (h & 0xffff) / 65536.0, v2 = (h >> 16) / 65536.0;
    int r, g, b;
    if (root) {
        r = g = b = 200;
    } else if (f->allocator[name]) {
        r = 230 + (int)(25 * v1), g = 120 + (int)(60 * v2), b = 40 + (int)(30 * v1);
    } else {
        r = 40 + (int)(70 * v1), g = 150 + (int)(80 * v2), b = 110 + (int)(110 * v1);
    }
    fprintf(out, "rgb(%d,%d,%d)", r, g, b);
}

typedef struct svg {
    FILE *out;
    const at_flame *f;
    const char *unit;
    double scale; /* pixels per unit of cost */
    int height;
} svg;

/* The name as it fits in w pixels: "" when not even three characters fit,
 * else truncated with "..". */
static void put_label(FILE *out, const char *name, double w)
{
    size_t fit = (size_t)(w / (FONT * 0.59));
    size_t len = strlen(name);
    if (fit < 3)
        return;
    if (len <= fit) {
        at_xml_put(out, name, len);
        return;
    }
    at_xml_put(out, name, fit - 2);
    fputs("..", out);
}

static void frame(const svg *s, uint32_t id, double x)
{
    const at_fnode *n = &s->f->nodes[id];
    double w = (double)n->cost[0] * s->scale;
    if (w < MIN_WIDTH)
        return;
    const char *name = s->f->names[n->name];
    double y = s->height - BOTTOM_PAD - (double)(n->depth + 1) * FRAME_H;
    double total = (double)s->f->nodes[0].cost[0];
    FILE *o = s->out;
    /* numbers written by hand: printf's floating point would be most of
     * the time spent here */
    fputs("<g class=\"f\"><title>", o);
    at_xml_put(o, name, strlen(name));
    fputs(" (", o);
    at_put_grouped(o, n->cost[0]);
    fprintf(o, " %s, ", s->unit);
    at_put_fixed2(o, total > 0 ? 100.0 * (double)n->cost[0] / total : 0.0);
    fputs("%)</title><rect x=\"", o);
    at_put_fixed2(o, x);
    fputs("\" y=\"", o);
    at_put_u64(o, (uint64_t)y);
    fputs("\" width=\"", o);
    at_put_fixed2(o, w);
    fputs("\" height=\"15\" fill=\"", o);
    put_colour(o, s->f, n->name, id == 0);
    fputs("\" rx=\"2\" ry=\"2\"/><text x=\"", o);
    at_put_fixed2(o, x + 3);
    fputs("\" y=\"", o);
    at_put_u64(o, (uint64_t)y + FRAME_H - 6); /* the baseline, 5.5 above the bottom */
    fputs(".5\">", o);
    put_label(o, name, w);
    fputs("</text></g>\n", s->out);
    for (uint32_t c = n->first_child; c != AT_PROFILE_NONE; c = s->f->nodes[c].next_sibling) {
        frame(s, c, x);
        x += (double)s->f->nodes[c].cost[0] * s->scale;
    }
}

static void header(const svg *s, const char *title)
{
    FILE *o = s->out;
    fprintf(o,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" data-unit=\"%s\">\n"
            "<style>text{font-family:Verdana,sans-serif;font-size:%dpx;fill:#000}"
            ".f text{pointer-events:none}.f:hover rect{stroke:#000;stroke-width:0.5}"
            ".b{cursor:pointer}.hide{display:none}.fade{opacity:0.5}</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#f6f6f0\"/>\n"
            "<text id=\"title\" x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" style=\"font-size:17px\">",
            WIDTH, s->height, WIDTH, s->height, s->unit, FONT, WIDTH / 2, 2 * FONT);
    at_xml_put(o, title, strlen(title));
    fprintf(o,
            "</text>\n"
            "<text id=\"unzoom\" class=\"b hide\" x=\"%.0f\" y=\"%d\">Reset Zoom</text>\n"
            "<text id=\"search\" class=\"b\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\">Search</text>\n"
            "<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"> </text>\n"
            "<text id=\"details\" x=\"%.0f\" y=\"%d\"> </text>\n"
            "<g id=\"frames\">\n",
            XPAD, 2 * FONT + 12, WIDTH - XPAD, 2 * FONT + 12, WIDTH - XPAD,
            s->height - FONT / 2, XPAD, s->height - FONT / 2);
}

int at_export_flamegraph(FILE *out, const at_profile *p, const at_export_meta *meta, at_cost cost,
                         bool short_names)
{
    at_flame *f = at_flame_of_cost(p, short_names, cost);
    const char *unit = cost == AT_COST_BLOCKS ? "blocks" : "bytes";
    uint64_t total = f->nodes[0].cost[0];
    svg s = { out, f, unit, total ? (WIDTH - 2 * XPAD) / (double)total : 0,
              TOP_PAD + BOTTOM_PAD + (int)(f->max_depth + 1) * FRAME_H };
    const char *process = meta && meta->process ? meta->process : NULL;
    const char *what = meta && meta->leaks ? "Leaks" : "Allocations";
    const char *est = meta && meta->sample_interval ? ", estimated from a sample" : "";
    char *title = process ? at_xasprintf("%s of %s (%s%s)", what, process, unit, est)
                          : at_xasprintf("%s (%s%s)", what, unit, est);
    header(&s, title);
    free(title);
    if (total)
        frame(&s, 0, XPAD);
    fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
            at_asset_flamegraph_js);
    at_flame_free(f);
    return ferror(out) ? -1 : 0;
}
