/* alloc_tree.h: an intrusive treap (a randomised balanced search tree), the
 * ordered set under the allocator model and the host backend.
 *
 * Nodes are ordered by the pair (k1, k2); keys are unique. Each node also
 * carries a value `val`, and the tree keeps in `max` the largest val of each
 * subtree, so "the lowest key whose val is at least n" takes one descent
 * (the host backend's first-fit search over free address ranges).
 *
 *   free blocks of a pool:   k1 = size, k2 = address   (PyTorch's BlockComparatorSize)
 *   free address ranges:     k1 = start, k2 = 0, val = length
 *
 * Every operation is O(log n) expected; nothing scans. The caller owns the
 * node memory; a node is in at most one tree at a time. */
#ifndef MC_ALLOC_TREE_H
#define MC_ALLOC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ca_tnode {
    struct ca_tnode *c[2]; /* children: c[0] smaller keys, c[1] larger */
    uint64_t k1, k2;  /* the key */
    uint64_t val;     /* any value; its subtree maximum is kept in max */
    uint64_t max;
    uint32_t prio;    /* heap order: a parent's prio >= its children's */
} ca_tnode;

typedef struct {
    ca_tnode *root;
    size_t n;
    uint32_t rng;     /* xorshift32 state for priorities (never 0) */
    bool aug;         /* keep max (else max is left alone) */
} ca_tree;

/* aug: keep the subtree maxima of val (needed by ca_tree_first_fit). */
void ca_tree_init(ca_tree *t, bool aug);
/* Inserts n (k1, k2, val set by the caller). Its key must not be in t. */
void ca_tree_insert(ca_tree *t, ca_tnode *n);
/* Removes n, which must be in t. */
void ca_tree_erase(ca_tree *t, ca_tnode *n);

/* The first node with key >= (k1, k2), or NULL. */
ca_tnode *ca_tree_lower_bound(const ca_tree *t, uint64_t k1, uint64_t k2);
/* The last node with key < (k1, k2), or NULL. */
ca_tnode *ca_tree_before(const ca_tree *t, uint64_t k1, uint64_t k2);
/* The last node with key <= (k1, k2), or NULL. */
ca_tnode *ca_tree_floor(const ca_tree *t, uint64_t k1, uint64_t k2);
/* The node with the smallest / largest key, or NULL. */
ca_tnode *ca_tree_first(const ca_tree *t);
ca_tnode *ca_tree_last(const ca_tree *t);
/* The node with the smallest key whose val >= need, or NULL (aug trees);
 * the same among the nodes whose k1 > after. */
ca_tnode *ca_tree_first_fit(const ca_tree *t, uint64_t need);
ca_tnode *ca_tree_first_fit_after(const ca_tree *t, uint64_t need, uint64_t after);

/* Checks the search order, the heap order, every max (aug) and the count.
 * Returns 0, or -1 with the reason in err. O(n). */
int ca_tree_check(const ca_tree *t, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
