/* tfm_tape.c: reference-counted buffers, the autograd tape and its
 * backward run, non-reentrant checkpointing's holders, workspaces and
 * reduction scratch for the Transformer workload (tfm_internal.h says how
 * it follows PyTorch's engine). What keeps a saved tensor elsewhere or
 * makes it again (offload, checkpoint's recomputation) it reaches through
 * the saved-tensor hooks (tfm_saved_hooks) only. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm_internal.h"
#include "workload/transformer/kernels/tfm_kernels.h"
#include "workload/core/reduce_scratch.h"


/* ------------------------------------------------------------ buffers */

tb *tb_new(mc_tfm *T, uint64_t bytes, mc_wl_category cat, const char *what)
{
    if (T->ctx.oom || T->stopped) return NULL;
    tb *b = calloc(1, sizeof *b);
    CHECK(b != NULL, "out of host memory");
    if (wl_alloc(&T->ctx, &b->t, bytes, cat, false, what) != 0) {
        free(b);
        T->ctx.oom = true;
        return NULL;
    }
    b->refs = 1;
    b->next = T->all;
    if (T->all) T->all->prev = b;
    T->all = b;
    return b;
}

void tb_ref(tb *b)
{
    if (b) b->refs++;
}

static void tb_forget(mc_tfm *T, tb *b)
{
    if (b->prev) b->prev->next = b->next;
    else T->all = b->next;
    if (b->next) b->next->prev = b->prev;
    free(b);
}

void tb_unref(mc_tfm *T, tb *b)
{
    if (!b) return;
    CHECK(b->refs > 0, "transformer: buffer released twice");
    if (--b->refs) return;
    wl_free(&T->ctx, &b->t);
    tb_forget(T, b);
}

void tv_drop(mc_tfm *T, tv *x)
{
    tb_unref(T, x->b);
    *x = TV_NONE;
}

tv tv_view(tv x)
{
    tb_ref(x.b);
    return x;
}

uint64_t tv_addr(const mc_tfm *T, tv x)
{
    if (x.b) return x.b->t.addr + (uint64_t)x.off;
    if (x.node <= -2) return T->p[-2 - x.node].p.addr + (uint64_t)x.off;
    CHECK(x.node >= 0, "transformer: the address of a tensor that has none");
    return T->p[T->tape[x.node].a[2]].p.addr + (uint64_t)x.off; /* a split parameter's part */
}

int tfm_dt(const mc_tfm *T, int es) { return es == 4 ? MC_DT_F32 : T->dt; }

/* After an OOM: every buffer goes, as the caught error drops the frames and
 * the graph; the tape is cleared. */
void tfm_unwind(mc_tfm *T)
{
    tape_clear(T);
    for (int i = 0; i < T->np; i++) {
        tb_unref(T, T->p[i].cast);
        T->p[i].cast = NULL;
    }
    while (T->all) {
        tb *b = T->all;
        wl_free(&T->ctx, &b->t);
        tb_forget(T, b);
    }
}

/* ------------------------------------------------------------ scratch */

int workspaces(mc_tfm *T, bool lt)
{
    wl_t *ws = T->handle ? &T->ws_bwd : &T->ws_fwd, *lw = T->handle ? &T->lt_bwd : &T->lt_fwd;
    if (T->ctx.oom) return -1;
    if (!ws->addr) {
        if (wl_alloc(&T->ctx, ws, T->c.cublas_ws, MC_WL_WORKSPACE, true,
                     T->handle ? "cuBLAS workspace, backward thread" : "cuBLAS workspace, forward thread") != 0)
            goto oom;
        if (TG(T)) mc_gpu_set_workspace(TG(T), T->handle, WL_PTR(*ws), ws->bytes);
    }
    if (lt && !lw->addr) {
        if (wl_alloc(&T->ctx, lw, T->c.cublaslt_ws, MC_WL_WORKSPACE, true,
                     T->handle ? "cuBLASLt workspace, backward thread" : "cuBLASLt workspace, forward thread") != 0)
            goto oom;
        if (TG(T)) mc_gpu_set_lt_workspace(TG(T), T->handle, WL_PTR(*lw), lw->bytes);
    }
    return 0;
oom:
    T->ctx.oom = true;
    return -1;
}

/* gpu_reduce_kernel's buffer and semaphores (none where it needs no global
 * reduce), freed once the kernel is queued: reduce_end. */
int reduce_begin(mc_tfm *T, int64_t outputs, int64_t inputs, bool along_rows, int es)
{
    uint64_t buf = 0, sem = 0;
    if (T->ctx.oom) return -1;
    wl_reduce_scratch(outputs, inputs, along_rows, 4, es, T->c.sm_count, &buf, &sem);
    if (!buf) return 0;
    if (wl_alloc(&T->ctx, &T->red_buf, buf, MC_WL_OTHER, false, "reduction buffer") != 0 ||
        wl_alloc(&T->ctx, &T->red_sem, sem, MC_WL_OTHER, false, "reduction semaphores") != 0) {
        wl_free(&T->ctx, &T->red_buf);
        T->ctx.oom = true;
        return -1;
    }
    return 0;
}

void reduce_end(mc_tfm *T)
{
    wl_free(&T->ctx, &T->red_sem);
    wl_free(&T->ctx, &T->red_buf);
}

int reduce_scratch(mc_tfm *T, int64_t outputs, int64_t inputs, bool along_rows, int es)
{
    if (reduce_begin(T, outputs, inputs, along_rows, es)) return -1;
    reduce_end(T);
    return 0;
}

/* The bias's gradient: the rows of g summed (sum_to), with the reduction's
 * scratch where PyTorch's has one. */
int bias_grad(mc_tfm *T, tb *out, tb *g, int64_t rows, int64_t n, int es)
{
    if (reduce_begin(T, n, rows, true, es)) return -1;
    if (TG(T))
        mc_gpu_bias_grad(TG(T), TBP(out), TBP(g), rows, n, tfm_dt(T, es), WL_PTR(T->red_buf),
                         T->red_buf.bytes);
    reduce_end(T);
    return 0;
}

/* ------------------------------------------------------------ the tape */

int tape_node(mc_tfm *T, bwd_fn f, const char *what, int nnext)
{
    if (T->nt == T->cap_t) {
        T->cap_t = T->cap_t ? 2 * T->cap_t : 256;
        T->tape = realloc(T->tape, (size_t)T->cap_t * sizeof *T->tape);
        CHECK(T->tape != NULL, "out of host memory");
    }
    tnode *nd = &T->tape[T->nt];
    memset(nd, 0, sizeof *nd);
    nd->bwd = f;
    nd->what = what;
    nd->nnext = nnext;
    for (int k = 0; k < MAX_NEXT; k++) nd->next[k].node = -1;
    nd->group = T->recomputing ? -1 : T->cur_group;
    return T->nt++;
}

void tape_edge(mc_tfm *T, int node, int k, tv from)
{
    T->tape[node].next[k].node = from.node;
    T->tape[node].next[k].slot = from.slot | (from.contig ? 0 : 0x100);
    T->tape[node].next[k].es = from.es;
}

/* The gradient of edge k reaches the next node as a view of what this node
 * made: a view op (reshape, transpose, view) sits between them, whose
 * backward views its gradient (ViewBackward0 on a contiguous gradient). */
void tape_edge_view(mc_tfm *T, int node, int k)
{
    T->tape[node].next[k].slot |= 0x200;
}

/* A tensor saved for backward (bytes of it from device address addr).
 * Inside a checkpointed layer's first forward only a holder is kept
 * (counted, no reference); the recomputation keeps the real one, and stops
 * once the last one the layer saved is saved again. A pack hook may keep it
 * instead (--offload: on the host). */
static void save(mc_tfm *T, int node, tb *b, uint64_t addr, uint64_t bytes, int param)
{
    tnode *nd = &T->tape[node];
    CHECK(nd->nsaved < MAX_SAVED, "transformer: too many saved tensors");
    nd->sp[nd->nsaved] = 0;
    /* Autograd off (no_grad, inference_mode): no node is made in PyTorch and
     * nothing is saved, so a tensor goes with its last Python owner. The
     * tape's nodes stay (they hold nothing) and go with tape_clear. */
    if (T->no_grad) return;
    if (nd->group >= 0 && !T->recomputing) {
        nd->saved[nd->nsaved++] = NULL;
        nd->orig_saved = nd->nsaved;
        return;
    }
    if (T->hooks.pack && T->hooks.pack(T, nd, nd->nsaved, b, addr, bytes)) {
        nd->packed[nd->nsaved++] = true;
        return;
    }
    tb_ref(b);
    nd->sa[nd->nsaved] = param >= 0 ? addr - T->p[param].p.addr : addr;
    nd->sp[nd->nsaved] = param + 1;
    nd->saved[nd->nsaved++] = b;
    if (T->recomputing) {
        const tgroup *g = &T->grp[T->rec_target];
        int orig = g->first + (node - T->rec_base);
        if (orig == g->last_saving && nd->nsaved == T->tape[orig].orig_saved) T->stopped = true;
    }
}

void tape_save(mc_tfm *T, int node, tb *b)
{
    save(T, node, b, b ? b->t.addr : 0, b ? b->t.bytes : 0, -1);
}

/* A view or a parameter: its own address; a view's elements are
 * [off, off + n * es) of its storage (q, k, v, a transposed input). */
void tape_save_tv(mc_tfm *T, int node, tv x)
{
    const uint64_t bytes = (uint64_t)(x.n * x.es);
    CHECK(!x.b || (uint64_t)x.off + bytes <= x.b->t.bytes, "transformer: a saved view past its storage");
    const int param = x.b ? -1 : x.node <= -2 ? -2 - x.node : (int)T->tape[x.node].a[2];
    save(T, node, x.b, tv_addr(T, x), bytes, param);
}

uint64_t tape_saved_addr(const mc_tfm *T, const tnode *nd, int i)
{
    return nd->sp[i] ? T->p[nd->sp[i] - 1].p.addr + nd->sa[i] : nd->sa[i];
}

static void release_group_inputs(mc_tfm *T, tgroup *g)
{
    tv_drop(T, &g->in);
    tv_drop(T, &g->mem);
}

/* A packed slot's copy goes, once (the pack hook's own). */
static void drop_packed(mc_tfm *T, tnode *nd, int i)
{
    if (!nd->packed[i]) return;
    nd->packed[i] = false;
    T->hooks.drop(T, nd, i);
}

static void release_saved(mc_tfm *T, tnode *nd)
{
    if (nd->released) return;
    nd->released = true;
    bool held = false;
    for (int i = 0; i < nd->nsaved; i++) {
        tb_unref(T, nd->saved[i]);
        nd->saved[i] = NULL;
        drop_packed(T, nd, i); /* release_variables: the packed copy goes */
    }
    held = nd->group >= 0 && nd->orig_saved > 0;
    if (held && --T->grp[nd->group].live_nodes == 0) release_group_inputs(T, &T->grp[nd->group]);
}

/* apply() returns: unpacked recomputed tensors, or tensors an unpack hook
 * made (its locals, their last owners), go, then the incoming
 * gradients. */
void tape_apply_return(mc_tfm *T, tnode *nd)
{
    if (nd->applied) return;
    nd->applied = true;
    for (int i = 0; i < nd->nsaved; i++)
        if (nd->group >= 0 || nd->packed[i]) {
            tb_unref(T, nd->saved[i]);
            nd->saved[i] = NULL;
        }
    for (int s = 0; s < 3; s++) {
        tb_unref(T, nd->gin[s]);
        nd->gin[s] = NULL;
    }
}

/* AccumulateGrad: .grad steals a gradient nobody else holds, else clones it;
 * on later micro-steps it is added in place and dropped. */
static int accumulate_grad(mc_tfm *T, int pi, tb *g)
{
    tparam *p = &T->p[pi];
    if (!p->g.addr) {
        if (g->refs == 1) {
            wl_move(&T->ctx, &p->g, &g->t);
            tb_forget(T, g);
            return 0;
        }
        if (wl_alloc(&T->ctx, &p->g, (uint64_t)p->n * 4, MC_WL_GRADS, false, "AccumulateGrad clone") != 0) {
            T->ctx.oom = true;
            tb_unref(T, g);
            return -1;
        }
        if (TG(T)) mc_gpu_copy(TG(T), WL_PTR(p->g), TBP(g), (uint64_t)p->n * 4);
    } else if (TG(T)) { /* later micro-steps: .grad += g */
        mc_gpu_add(TG(T), (float *)WL_PTR(p->g), (const float *)TBP(g), p->n);
    }
    tb_unref(T, g);
    return 0;
}

/* A gradient reaches a node's input buffer (engine.cpp InputBuffer::add). */
static int deliver(mc_tfm *T, int node, int slot, tb *g, bool nc, bool view, int es)
{
    if (!g) return 0;
    if (node <= -2) return accumulate_grad(T, -2 - node, g);
    if (node < 0) {
        tb_unref(T, g);
        return 0;
    }
    tnode *nd = &T->tape[node];
    const int64_t n = (int64_t)(g->t.bytes / (uint64_t)es);
    if (!nd->gin[slot]) {
        nd->gin[slot] = g;
        nd->gin_nc[slot] = nc;
        nd->gin_view[slot] = view;
        nd->gin_es[slot] = es;
        return 0;
    }
    /* input_buffer.cpp accumulate: old_var.add_(var) where
     * can_accumulate_inplace(old_var), its tensor and its storage held by
     * the buffer alone; a view's storage is held by its base too */
    const int dt = tfm_dt(T, es);
    if (nd->gin[slot]->refs == 1 && !nd->gin_view[slot]) { /* old_var.add_(var) */
        if (TG(T)) tfm_add(TG(T), TBP(nd->gin[slot]), dt, TBP(nd->gin[slot]), dt, TBP(g), dt, n);
        tb_unref(T, g);
        return 0;
    }
    tb *sum = tb_new(T, nd->gin[slot]->t.bytes, (mc_wl_category)nd->gin[slot]->t.cat,
                     "InputBuffer: old + new");
    if (!sum) {
        tb_unref(T, g);
        return -1;
    }
    if (TG(T)) tfm_add(TG(T), TBP(sum), dt, TBP(nd->gin[slot]), dt, TBP(g), dt, n);
    tb_unref(T, nd->gin[slot]); /* buffer[pos] = old_var + var, then var goes */
    tb_unref(T, g);
    nd->gin[slot] = sum; /* laid out as old_var (TensorIterator: the first input's strides) */
    nd->gin_view[slot] = false;
    return 0;
}

static int run_backward(mc_tfm *T, int root, tb *grad);

int tape_backward(mc_tfm *T, int root, tb *grad)
{
    T->handle = 1; /* autograd's device thread, with its own cuBLAS handle */
    int rc = run_backward(T, root, grad);
    T->handle = 0;
    return rc;
}

static int run_backward(mc_tfm *T, int root, tb *grad)
{
    if (deliver(T, root, 0, grad, false, false, 4)) return -1;
    for (int i = T->nt - 1; i >= 0; i--) {
        tnode *nd = &T->tape[i];
        if (!nd->gin[0] && !nd->gin[1] && !nd->gin[2]) continue;
        /* checkpoint recomputes at the first unpack of a saved tensor: a
         * node that saved none (a residual add) runs before it */
        if (nd->group >= 0 && !T->grp[nd->group].recomputed && nd->nsaved > 0) {
            CHECK(T->hooks.recompute != NULL, "transformer: a checkpointed layer without its recompute hook");
            if (T->hooks.recompute(T, nd->group)) return -1;
        }
        nd = &T->tape[i]; /* the recomputation may have moved the tape */
        if (nd->wrap_pre && T->wrap.pre_backward && /* a wrapper's hook on a layer's output */
            T->wrap.pre_backward(T->wrap.ctx, nd->wrap_pre - 1)) {
            T->ctx.oom = true;
            return -1;
        }
        nd = &T->tape[i];
        if (T->hooks.unpack && T->hooks.unpack(T, nd)) return -1; /* apply's unpack, before its work */
        tb *out[MAX_NEXT] = {NULL, NULL, NULL, NULL};
        if (nd->bwd(T, nd, out)) return -1;
        tape_apply_return(T, nd);
        nd->ran = true;
        release_saved(T, nd);
        for (int k = 0; k < nd->nnext; k++) {
            /* a transpose between this node and the next leaves the gradient
             * non-contiguous: bit 8 of the slot marks it (tape_edge); bit 9
             * a view of it (tape_edge_view) */
            int slot = nd->next[k].slot & 0xff;
            bool ncv = (nd->next[k].slot >> 8) & 1, view = (nd->next[k].slot >> 9) & 1;
            if (deliver(T, nd->next[k].node, slot, out[k], ncv, view || ncv, nd->next[k].es)) return -1;
        }
        if (T->ctx.oom) return -1;
    }
    return 0;
}

/* The graph goes (backward done, or an OOM): holders and group inputs too. */
void tape_clear(mc_tfm *T)
{
    for (int i = 0; i < T->nt; i++) {
        tnode *nd = &T->tape[i];
        for (int s = 0; s < 3; s++) tb_unref(T, nd->gin[s]);
        for (int s = 0; s < nd->nsaved; s++) {
            tb_unref(T, nd->saved[s]);
            drop_packed(T, nd, s);
        }
    }
    T->nt = 0;
    if (T->hooks.freed) T->hooks.freed(T);
    for (int g = 0; g < T->ngrp; g++) release_group_inputs(T, &T->grp[g]);
    T->ngrp = 0;
}
