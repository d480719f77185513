/* Debug-mode workloads (fm5 only): the program enters fm5's debug mode itself through the DLL's
 * FastMM_EnterDebugMode and FastMM_SetDebugModeStackTraceEntryCount, and leaves it at the end.
 *
 * debug_<size>[_d20]: allocate and free one block of <size> bytes repeatedly, stack traces off
 * (depth 0) or at depth 20: the loop FastMM5 PR #96/#97 measured (64 B x 4,000,000, 4 KiB x 750,000,
 * 64 KiB x 50,000 natively on a Ryzen 9 7950X, about 0.2-0.35 s each). Our counts per size are in
 * debug_iterations(): the first column at depth 0, the second at depth 20, where capturing two stack
 * traces per iteration (about 3 us under Wine) dominates all but the 64 KiB fills.
 *
 * xml_debug: an XML-parser-like document build and teardown in debug mode (depth 20, FastMM5's
 * default): element nodes, tag and attribute strings, text, and child arrays grown by realloc; the
 * freed-block distribution (about 4/5 small blocks by count, under 1/10 of the bytes) is printed to
 * stderr. */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static void enter_debug(unsigned depth)
{
    if (!g_alloc.enter_debug_mode)
        bench_fatal("debug workloads need an fm5 allocator (fm5 or fm5:<dll>)");
    if (!g_alloc.enter_debug_mode())
        bench_fatal("FastMM_EnterDebugMode failed");
    if (g_alloc.set_stack_depth(depth) != 0)
        bench_fatal("FastMM_SetDebugModeStackTraceEntryCount(%u) failed", depth);
}

static double debug_iterations(size_t size, unsigned depth)
{
    if (size <= 128)
        return depth ? 200000 : 2000000;
    if (size <= 1024)
        return depth ? 150000 : 1000000;
    if (size <= 4096)
        return depth ? 150000 : 400000;
    return depth ? 20000 : 30000;
}

uint64_t wl_debug_loop(const workload *w, double scale)
{
    size_t size = (size_t)w->param;
    unsigned depth = (unsigned)w->param2;
    enter_debug(depth);
    long iterations = bench_scaled(debug_iterations(size, depth), scale);
    uint64_t ops = 0;
    bench_timer_restart();
    for (long i = 0; i < iterations; i++) {
        void *p = b_malloc(&ops, size);
        *(volatile char *)p = 1;
        b_free(&ops, p);
    }
    bench_timer_stop();
    g_alloc.exit_debug_mode();
    return ops;
}

/* ---- xml_debug ---------------------------------------------------------------------------------- */

/* fm5's block kinds: small up to 2622 bytes, medium up to 558,904, large above. */
enum { KIND_SMALL, KIND_MEDIUM, KIND_LARGE };
static uint64_t g_freed_count[3], g_freed_bytes[3];

static void count_freed(size_t size)
{
    int kind = size <= 2622 ? KIND_SMALL : size <= 558904 ? KIND_MEDIUM : KIND_LARGE;
    g_freed_count[kind]++;
    g_freed_bytes[kind] += size;
}

typedef struct xml_node {
    struct xml_node **children; /* a Delphi dynamic array: header + capacity pointers */
    size_t child_count, child_capacity;
    const char *tag;            /* interned in the parser's name table: no allocation */
    char **attributes;          /* a dynamic array: name, value (Delphi strings) */
    size_t attribute_bytes[2];
    size_t attribute_count;
    char *text;
    size_t text_bytes;
} xml_node;

typedef struct xml_doc {
    uint64_t rng;
    uint64_t ops;
} xml_doc;

static char *new_string(xml_doc *d, size_t chars, size_t *bytes)
{
    *bytes = delphi_string_bytes(chars);
    char *s = b_malloc(&d->ops, *bytes);
    memset(s, 'x', *bytes); /* the parser copies the characters in */
    return s;
}

static void free_counted(xml_doc *d, void *p, size_t bytes)
{
    if (p) {
        count_freed(bytes);
        b_free(&d->ops, p);
    }
}

/* Text lengths in characters: mostly short runs between tags, some paragraphs, rare big blobs
 * (CDATA, embedded base64). */
static size_t text_chars(xml_doc *d)
{
    uint64_t r = bench_rand(&d->rng);
    unsigned pick = (unsigned)(r % 1000);
    r >>= 10;
    if (pick < 200)
        return 1 + r % 60;
    if (pick < 998)
        return 1400 + r % 4000;
    return 100000 + r % 300000;
}

static xml_node *build(xml_doc *d, int depth)
{
    xml_node *n = b_malloc(&d->ops, sizeof *n);
    memset(n, 0, sizeof *n);
    static const char *const names[8] = {"item", "name", "value", "entry", "p", "div", "ref", "node"};
    n->tag = names[bench_rand(&d->rng) % 8];
    n->attribute_count = 2 * (bench_rand(&d->rng) % 2);
    if (n->attribute_count) {
        n->attributes = b_malloc(&d->ops, DELPHI_DYNARRAY + n->attribute_count * sizeof(char *));
        for (size_t k = 0; k < n->attribute_count; k++)
            n->attributes[k] = new_string(d, 2 + bench_rand(&d->rng) % 24, &n->attribute_bytes[k]);
    }
    n->text = new_string(d, text_chars(d), &n->text_bytes);
    if (depth < 5) {
        size_t children = (size_t)(bench_rand(&d->rng) % (depth == 0 ? 40 : 9));
        for (size_t c = 0; c < children; c++) {
            if (n->child_count == n->child_capacity) {
                /* The array grows by a quarter plus 4, as TList does; the old block is freed. */
                size_t old_bytes = DELPHI_DYNARRAY + n->child_capacity * sizeof(xml_node *);
                n->child_capacity += n->child_capacity / 4 + 4;
                size_t new_bytes = DELPHI_DYNARRAY + n->child_capacity * sizeof(xml_node *);
                if (n->children)
                    count_freed(old_bytes);
                char *block = n->children ? (char *)n->children - DELPHI_DYNARRAY : NULL;
                block = b_realloc(&d->ops, block, new_bytes);
                n->children = (xml_node **)(block + DELPHI_DYNARRAY);
            }
            n->children[n->child_count++] = build(d, depth + 1);
        }
    }
    return n;
}

static void teardown(xml_doc *d, xml_node *n)
{
    for (size_t c = 0; c < n->child_count; c++)
        teardown(d, n->children[c]);
    if (n->children)
        free_counted(d, (char *)n->children - DELPHI_DYNARRAY,
                     DELPHI_DYNARRAY + n->child_capacity * sizeof(xml_node *));
    for (size_t k = 0; k < n->attribute_count; k++)
        free_counted(d, n->attributes[k], n->attribute_bytes[k]);
    if (n->attribute_count)
        free_counted(d, n->attributes, DELPHI_DYNARRAY + n->attribute_count * sizeof(char *));
    free_counted(d, n->text, n->text_bytes);
    free_counted(d, n, sizeof *n);
}

/* XML_DOCUMENTS documents (x --scale), each built and torn down; a document has about 3,000 nodes. */
#define XML_DOCUMENTS 8.0

uint64_t wl_xml_debug(const workload *w, double scale)
{
    (void)w;
    enter_debug(20);
    xml_doc d = {0x5EED0001ull, 0};
    long documents = bench_scaled(XML_DOCUMENTS, scale);
    bench_timer_restart();
    for (long i = 0; i < documents; i++) {
        xml_node *root = build(&d, 0);
        teardown(&d, root);
    }
    bench_timer_stop();
    g_alloc.exit_debug_mode();
    uint64_t count = g_freed_count[0] + g_freed_count[1] + g_freed_count[2];
    uint64_t bytes = g_freed_bytes[0] + g_freed_bytes[1] + g_freed_bytes[2];
    static const char *names[3] = {"small", "medium", "large"};
    fprintf(stderr, "xml_debug freed blocks: %llu, %llu bytes\n", (unsigned long long)count,
            (unsigned long long)bytes);
    for (int k = 0; k < 3; k++)
        fprintf(stderr, "xml_debug %-6s count %llu (%.1f%%) bytes %llu (%.1f%%)\n", names[k],
                (unsigned long long)g_freed_count[k], count ? 100.0 * (double)g_freed_count[k] / (double)count : 0.0,
                (unsigned long long)g_freed_bytes[k], bytes ? 100.0 * (double)g_freed_bytes[k] / (double)bytes : 0.0);
    return d.ops;
}
