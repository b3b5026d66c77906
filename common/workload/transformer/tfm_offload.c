/* tfm_offload.c: --offload (C23), PyTorch's
 *
 *   with torch.autograd.graph.save_on_cpu(pin_memory=True): loss = ...
 *
 * for the saved ACTIVATIONS only. save_on_cpu's pack hook copies a saved
 * tensor into a pinned host tensor of its own size (packed.copy_(tensor))
 * and keeps no reference to the device one, which is freed once the
 * forward's other owners let go; the unpack hook, when the node's backward
 * unpacks its saved tensors (all of them, at the start of apply), makes a
 * new device tensor of that size (tensor.to(device, non_blocking=True)),
 * a local of apply freed when apply returns.
 *
 * Where this differs from save_on_cpu, by choice (issue 9 item 5):
 * - parameters, autocast's cached weight casts and the attention's philox
 *   seed and offset stay on the device: only buffers of the activations
 *   category are offloaded. save_on_cpu's hook is handed every saved tensor,
 *   as we read it parameters included (each unpack then a device copy of a
 *   weight); a pack hook that skips parameters is the usual practice, and
 *   the casts and seeds are shared or tiny;
 * - a view (q, k, v of the packed in-projection, a transposed input) is
 *   copied as the bytes [offset, offset + numel * size) of its storage (every
 *   view saved here covers that range) and comes back as a block of that
 *   size read with the view's strides; save_on_cpu packs it into a
 *   contiguous pinned tensor of the same size (torch.empty(size) then
 *   copy_), so the device requests are the same and only the layout the
 *   kernels read differs;
 * - the device-to-host copy is asynchronous on the step's stream (PyTorch's
 *   copy_ into pinned memory without non_blocking waits for it on the
 *   host); on one stream the device sees the same order;
 * - with --checkpoint it is refused (tfm_config.c): a checkpointed
 *   layer saves only holders, and what PyTorch would do with the
 *   recomputed tensors is not modelled.
 * Model-only: the same device requests, no copies. */
#include <stdlib.h>

#include "check.h"
#include "tfm_offload.h"
#include "workload/core/wl_gpu.h"

/* Whether a saved buffer goes to the host. */
static bool wants(const mc_tfm *T, const tb *b)
{
    return T->c.offload && b && b->t.cat == MC_WL_ACTIVATIONS && !T->recomputing &&
           T->cur_group < 0;
}

/* The smallest free pinned buffer of at least bytes, or a new one. The
 * steps save the same sizes in the same order, so after the first step
 * the pool is reused (as PyTorch's CachingHostAllocator reuses its blocks). */
static int pinned_get(mc_tfm *T, uint64_t bytes)
{
    int best = -1;
    for (int i = 0; i < T->npin; i++)
        if (!T->pin[i].used && T->pin[i].bytes >= bytes && (best < 0 || T->pin[i].bytes < T->pin[best].bytes))
            best = i;
    if (best >= 0) {
        T->pin[best].used = true;
        return best;
    }
    if (T->npin == T->cap_pin) {
        T->cap_pin = T->cap_pin ? 2 * T->cap_pin : 64;
        T->pin = realloc(T->pin, (size_t)T->cap_pin * sizeof *T->pin);
        CHECK(T->pin != NULL, "out of host memory");
    }
    T->pin[T->npin] = (struct tfm_pinned){mc_gpu_pinned_alloc(bytes), bytes, true};
    return T->npin++;
}

/* The pack hook: bytes from device address addr kept on the host for
 * saved slot i of nd. */
static bool pack(mc_tfm *T, tnode *nd, int i, const tb *b, uint64_t addr, uint64_t bytes)
{
    if (!wants(T, b)) return false;
    CHECK(bytes > 0, "transformer: offloading an empty tensor");
    nd->host_bytes[i] = bytes;
    nd->host_slot[i] = -1;
    nd->saved[i] = NULL;
    nd->sa[i] = 0;
    T->host_live += bytes;
    if (T->host_live > T->host_peak) T->host_peak = T->host_live;
    if (!TG(T)) return true;
    nd->host_slot[i] = pinned_get(T, bytes);
    mc_gpu_to_pinned(TG(T), T->pin[nd->host_slot[i]].p, (const void *)(uintptr_t)addr, bytes);
    return true;
}

/* The unpack hook: every offloaded slot of nd back in a new device block
 * (0, or -1 on OOM). */
static int unpack(mc_tfm *T, tnode *nd)
{
    for (int i = 0; i < nd->nsaved; i++) {
        if (!nd->host_bytes[i] || nd->saved[i]) continue;
        tb *b = tb_new(T, nd->host_bytes[i], MC_WL_ACTIVATIONS, "saved activation unpacked from host");
        if (!b) return -1;
        if (TG(T)) mc_gpu_from_pinned(TG(T), TBP(b), T->pin[nd->host_slot[i]].p, nd->host_bytes[i]);
        nd->saved[i] = b;
        nd->sa[i] = b->t.addr;
    }
    return 0;
}

/* Slot i's host copy goes: its pinned buffer free for the next pack. */
static void drop(mc_tfm *T, tnode *nd, int i)
{
    if (!nd->host_bytes[i]) return;
    T->host_live -= nd->host_bytes[i];
    nd->host_bytes[i] = 0;
    if (nd->host_slot[i] >= 0) T->pin[nd->host_slot[i]].used = false;
    nd->host_slot[i] = -1;
}

/* The graph is gone: every host copy must have been dropped with it. */
static void freed(mc_tfm *T)
{
    CHECK(T->host_live == 0, "transformer: %llu bytes of offloaded activations outlive the graph",
          (unsigned long long)T->host_live);
    for (int i = 0; i < T->npin; i++) CHECK(!T->pin[i].used, "transformer: a pinned buffer outlives the graph");
}

void tfm_offload_hooks(tfm_saved_hooks *h)
{
    h->pack = pack;
    h->unpack = unpack;
    h->drop = drop;
    h->freed = freed;
}

void tfm_offload_free(mc_tfm *T)
{
    for (int i = 0; i < T->npin; i++) mc_gpu_pinned_free(T->pin[i].p);
    free(T->pin);
    T->pin = NULL;
    T->npin = T->cap_pin = 0;
}
