/* alloc_tree.c: the treap behind the allocator model's free sets and the host
 * backend's free address ranges (alloc_tree.h). Insertion splits the subtree
 * where the new node's priority belongs; erasure merges the node's children.
 * Children are c[0] (smaller keys) and c[1] (larger), so a descent picks the
 * next node by index rather than by a branch the CPU must predict. Trees
 * without maxima (the model's pools, the hot path) split and merge in loops;
 * trees with maxima recurse to fix them on the way back (depth O(log n)). */
#include "alloc_tree.h"

#include <stdbool.h>
#include <stdio.h>

/* 1 if key a is below key b, as 0/1 without branches. */
static unsigned key_less(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2)
{
    return (unsigned)(a1 < b1) | ((unsigned)(a1 == b1) & (unsigned)(a2 < b2));
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = a > b ? a : b;
    return m > c ? m : c;
}

static void update(ca_tnode *x)
{
    x->max = max3(x->val, x->c[0] ? x->c[0]->max : 0, x->c[1] ? x->c[1]->max : 0);
}

void ca_tree_init(ca_tree *t, bool aug)
{
    t->root = NULL;
    t->n = 0;
    t->rng = 2463534242u;
    t->aug = aug;
}

static uint32_t next_prio(ca_tree *t)
{
    uint32_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->rng = x;
    return x;
}

/* Splits s into the nodes below key k (*lo) and above it (*hi), keeping
 * every max up to date (recursive: the maxima are fixed on the way back). */
static void split_aug(ca_tnode *s, uint64_t k1, uint64_t k2, ca_tnode **lo, ca_tnode **hi)
{
    if (!s) {
        *lo = *hi = NULL;
        return;
    }
    if (key_less(s->k1, s->k2, k1, k2)) {
        split_aug(s->c[1], k1, k2, &s->c[1], hi);
        *lo = s;
    } else {
        split_aug(s->c[0], k1, k2, lo, &s->c[0]);
        *hi = s;
    }
    update(s);
}

/* The same without maxima, in a loop: the hot path of the model's pools. */
static void split_plain(ca_tnode *s, uint64_t k1, uint64_t k2, ca_tnode **lo, ca_tnode **hi)
{
    ca_tnode **out[2] = {hi, lo}; /* where the next node above / below k goes */
    while (s) {
        unsigned below = key_less(s->k1, s->k2, k1, k2);
        *out[below] = s;
        out[below] = &s->c[below];
        s = s->c[below];
    }
    *out[0] = *out[1] = NULL;
}

/* Joins a and b, every key of a below every key of b. */
static ca_tnode *merge_aug(ca_tnode *a, ca_tnode *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->prio >= b->prio) {
        a->c[1] = merge_aug(a->c[1], b);
        update(a);
        return a;
    }
    b->c[0] = merge_aug(a, b->c[0]);
    update(b);
    return b;
}

static ca_tnode *merge_plain(ca_tnode *a, ca_tnode *b)
{
    ca_tnode *root = NULL, **link = &root;
    while (a && b) {
        if (a->prio >= b->prio) {
            *link = a;
            link = &a->c[1];
            a = a->c[1];
        } else {
            *link = b;
            link = &b->c[0];
            b = b->c[0];
        }
    }
    *link = a ? a : b;
    return root;
}

void ca_tree_insert(ca_tree *t, ca_tnode *n)
{
    n->prio = next_prio(t);
    n->max = n->val;
    ca_tnode **link = &t->root;
    /* Down to where n's priority belongs; n joins every subtree passed. */
    while (*link && (*link)->prio >= n->prio) {
        ca_tnode *x = *link;
        if (n->val > x->max) x->max = n->val;
        link = &x->c[!key_less(n->k1, n->k2, x->k1, x->k2)];
    }
    if (t->aug) {
        split_aug(*link, n->k1, n->k2, &n->c[0], &n->c[1]);
        update(n);
    } else {
        split_plain(*link, n->k1, n->k2, &n->c[0], &n->c[1]);
    }
    *link = n;
    t->n++;
}

static ca_tnode *erase_aug(ca_tnode *s, ca_tnode *n)
{
    if (s == n) return merge_aug(n->c[0], n->c[1]);
    unsigned dir = !key_less(n->k1, n->k2, s->k1, s->k2);
    s->c[dir] = erase_aug(s->c[dir], n);
    update(s);
    return s;
}

void ca_tree_erase(ca_tree *t, ca_tnode *n)
{
    if (t->aug) {
        t->root = erase_aug(t->root, n);
    } else {
        ca_tnode **link = &t->root;
        while (*link != n) link = &(*link)->c[!key_less(n->k1, n->k2, (*link)->k1, (*link)->k2)];
        *link = merge_plain(n->c[0], n->c[1]);
    }
    n->c[0] = n->c[1] = NULL;
    t->n--;
}

ca_tnode *ca_tree_lower_bound(const ca_tree *t, uint64_t k1, uint64_t k2)
{
    ca_tnode *best = NULL;
    for (ca_tnode *x = t->root; x;) {
        unsigned below = key_less(x->k1, x->k2, k1, k2);
        best = below ? best : x;
        x = x->c[below];
    }
    return best;
}

ca_tnode *ca_tree_before(const ca_tree *t, uint64_t k1, uint64_t k2)
{
    ca_tnode *best = NULL;
    for (ca_tnode *x = t->root; x;) {
        unsigned below = key_less(x->k1, x->k2, k1, k2);
        best = below ? x : best;
        x = x->c[below];
    }
    return best;
}

ca_tnode *ca_tree_floor(const ca_tree *t, uint64_t k1, uint64_t k2)
{
    ca_tnode *best = NULL;
    for (ca_tnode *x = t->root; x;) {
        unsigned above = key_less(k1, k2, x->k1, x->k2);
        best = above ? best : x;
        x = x->c[!above];
    }
    return best;
}

ca_tnode *ca_tree_first(const ca_tree *t)
{
    ca_tnode *x = t->root;
    while (x && x->c[0]) x = x->c[0];
    return x;
}

ca_tnode *ca_tree_last(const ca_tree *t)
{
    ca_tnode *x = t->root;
    while (x && x->c[1]) x = x->c[1];
    return x;
}

ca_tnode *ca_tree_first_fit(const ca_tree *t, uint64_t need)
{
    ca_tnode *x = t->root;
    if (!x || x->max < need) return NULL;
    for (;;) {
        if (x->c[0] && x->c[0]->max >= need)
            x = x->c[0];
        else if (x->val >= need)
            return x;
        else
            x = x->c[1]; /* x->c[1]->max >= need, since x->max >= need */
    }
}

/* Subtrees whose max is below need are skipped whole, so this visits O(log n)
 * subtrees on each side of the boundary key. */
static ca_tnode *first_fit_after(ca_tnode *x, uint64_t need, uint64_t after)
{
    if (!x || x->max < need) return NULL;
    if (x->k1 > after) {
        ca_tnode *left = first_fit_after(x->c[0], need, after);
        if (left) return left;
        if (x->val >= need) return x;
    }
    return first_fit_after(x->c[1], need, after);
}

ca_tnode *ca_tree_first_fit_after(const ca_tree *t, uint64_t need, uint64_t after)
{
    return first_fit_after(t->root, need, after);
}

/* Walks s in order; *prev is the last node seen. Returns the count or -1. */
static long check_at(const ca_tnode *s, bool aug, const ca_tnode **prev, char *err, size_t len)
{
    if (!s) return 0;
    if ((s->c[0] && s->c[0]->prio > s->prio) || (s->c[1] && s->c[1]->prio > s->prio)) {
        snprintf(err, len, "treap: heap order broken at key (%llu, %llu)",
                 (unsigned long long)s->k1, (unsigned long long)s->k2);
        return -1;
    }
    long nl = check_at(s->c[0], aug, prev, err, len);
    if (nl < 0) return -1;
    if (*prev && !key_less((*prev)->k1, (*prev)->k2, s->k1, s->k2)) {
        snprintf(err, len, "treap: keys out of order at (%llu, %llu)",
                 (unsigned long long)s->k1, (unsigned long long)s->k2);
        return -1;
    }
    *prev = s;
    if (aug && s->max != max3(s->val, s->c[0] ? s->c[0]->max : 0, s->c[1] ? s->c[1]->max : 0)) {
        snprintf(err, len, "treap: stale subtree maximum at (%llu, %llu)",
                 (unsigned long long)s->k1, (unsigned long long)s->k2);
        return -1;
    }
    long nr = check_at(s->c[1], aug, prev, err, len);
    if (nr < 0) return -1;
    return nl + nr + 1;
}

int ca_tree_check(const ca_tree *t, char *err, size_t len)
{
    const ca_tnode *prev = NULL;
    long n = check_at(t->root, t->aug, &prev, err, len);
    if (n < 0) return -1;
    if ((size_t)n != t->n) {
        snprintf(err, len, "treap: counted %ld nodes, expected %zu", n, t->n);
        return -1;
    }
    return 0;
}
