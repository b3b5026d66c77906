/* wl_gpu.h: the workloads' arithmetic on the GPU, shared by the MLP and
 * the Transformer (wl_gpu.cu for the cuBLAS/cuBLASLt calls and the step's
 * stream, wl_kernels.cu and wl_grads.cu for the elementwise and reduction
 * kernels; the optimizers' are optimizer_step.h's). Every call is asynchronous on one
 * stream; the memory always comes from the caller (the allocator model), so
 * nothing here allocates device memory. Shapes are row-major, as PyTorch's:
 * a [m,n] matrix has n contiguous. dtype: MC_DT_* of the tensor named.
 * CUDA and cuBLAS errors exit MC_EXIT_CUDA. */
#ifndef MC_WL_GPU_H
#define MC_WL_GPU_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MC_DT_F32 = 0, MC_DT_F16 = 1, MC_DT_BF16 = 2 };
#define MC_DT_SIZE(dt) ((dt) == MC_DT_F32 ? 4 : 2)

typedef struct mc_wl_gpu mc_wl_gpu;

/* Handles for the forward (the Python thread in PyTorch) and the backward
 * (autograd's device thread), the stream, timing events, pinned scalars. */
mc_wl_gpu *mc_gpu_create(int max_micro_steps);
void mc_gpu_destroy(mc_wl_gpu *g);

/* cublasSetWorkspace for handle 0 (forward) or 1 (backward). The cuBLASLt
 * workspace of a handle is passed to each Lt call instead. */
void mc_gpu_set_workspace(mc_wl_gpu *g, int handle, void *ws, uint64_t bytes);
void mc_gpu_set_lt_workspace(mc_wl_gpu *g, int handle, void *ws, uint64_t bytes);

void mc_gpu_step_begin(mc_wl_gpu *g);          /* records the start event */
double mc_gpu_step_end(mc_wl_gpu *g);          /* records stop, waits, returns seconds */
void mc_gpu_sync(mc_wl_gpu *g);

/* --- data */
void mc_gpu_randn(mc_wl_gpu *g, float *p, int64_t n, uint64_t seed, uint64_t stream_id);
void mc_gpu_uniform(mc_wl_gpu *g, float *p, int64_t n, float bound, uint64_t seed,
                    uint64_t stream_id);
void mc_gpu_cast(mc_wl_gpu *g, void *dst, int dt_dst, const void *src, int dt_src, int64_t n);
void mc_gpu_fill(mc_wl_gpu *g, float *p, float v, int64_t n);
void mc_gpu_copy(mc_wl_gpu *g, void *dst, const void *src, uint64_t bytes);
/* rows rows of width bytes, from src every spitch bytes to dst every dpitch. */
void mc_gpu_copy2d(mc_wl_gpu *g, void *dst, uint64_t dpitch, const void *src, uint64_t spitch,
                   uint64_t width, uint64_t rows);
void mc_gpu_zero(mc_wl_gpu *g, void *p, uint64_t bytes);
void mc_gpu_fill_bytes(mc_wl_gpu *g, void *p, int byte, uint64_t bytes); /* memset */

/* --- forward. h[m,n] = x[m,k] W[n,k]^T + b[n] (cuBLASLt, bias epilogue, as
 * addmm's Lt path), on handle `handle`. r = relu(h). */
void mc_gpu_linear(mc_wl_gpu *g, int handle, void *h, const void *x, const void *W,
                   const void *b, int64_t m, int64_t k, int64_t n, int dt);
void mc_gpu_relu(mc_wl_gpu *g, void *r, const void *h, int64_t n, int dt);
/* h[m,n] = x[m,k] W[n,k]^T without bias (cuBLAS, as matmul's mm). */
void mc_gpu_mm_nt(mc_wl_gpu *g, int handle, void *h, const void *x, const void *W, int64_t m,
                  int64_t k, int64_t n, int dt);
/* loss[0] = mean((o - y)^2) * scale; o fp32 [n], y fp32 [n]; tmp [n]
 * receives (o - y)^2. (The workload passes mse_loss's first [n] block as
 * loss: PyTorch keeps the mean there.) */
void mc_gpu_mse(mc_wl_gpu *g, float *loss, float *tmp, const float *o, const float *y,
                int64_t n, float scale);
/* dst[0] = a[0] * (b ? b[0] : 1) * c (scalar ops of the loss and its grads). */
void mc_gpu_scalar(mc_wl_gpu *g, float *dst, const float *a, const float *b, float c);

/* --- backward */
/* gx[m,k] = gh[m,n] W[n,k]; gW[n,k] = gh[m,n]^T x[m,k] (cuBLAS GEMMs). */
void mc_gpu_gemm_dx(mc_wl_gpu *g, int handle, void *gx, const void *gh, const void *W,
                    int64_t m, int64_t k, int64_t n, int dt);
void mc_gpu_gemm_dw(mc_wl_gpu *g, int handle, void *gW, const void *gh, const void *x,
                    int64_t m, int64_t k, int64_t n, int dt);
/* gb[n] = sum over rows of gh[m,n] (fp32 accumulation, dt output). scratch:
 * the reduction buffer PyTorch's sum allocates for a split of the rows over
 * blocks (scratch_bytes of it; NULL, 0 where it allocates none): partial
 * sums go there, so the rows are split over the SMs only where it exists. */
void mc_gpu_bias_grad(mc_wl_gpu *g, void *gb, const void *gh, int64_t m, int64_t n, int dt,
                      void *scratch, uint64_t scratch_bytes);
/* gh = gr * (r > 0) */
void mc_gpu_relu_bwd(mc_wl_gpu *g, void *gh, const void *gr, const void *r, int64_t n, int dt);
/* go[i] = 2 (o[i] - y[i]) / n * gscalar[0] */
void mc_gpu_mse_bwd(mc_wl_gpu *g, float *go, const float *o, const float *y,
                    const float *gscalar, int64_t n);
void mc_gpu_add(mc_wl_gpu *g, float *dst, const float *src, int64_t n);   /* dst += src */
/* Sets p[0] to +inf (the injected overflow). */
void mc_gpu_poison(mc_wl_gpu *g, float *p);

/* --- GradScaler (the optimizers' updates: optimizer_step.h) */
/* inv[0] = 1 / scale[0] (in double, as scale.double().reciprocal().float()) */
void mc_gpu_inv_scale(mc_wl_gpu *g, float *inv, const float *scale);

/* --- host copies (asynchronous into pinned slots, read after mc_gpu_step_end) */
void mc_gpu_read_loss(mc_wl_gpu *g, int slot, const float *loss);
double mc_gpu_loss_sum(const mc_wl_gpu *g, int n_slots);
float mc_gpu_slot_loss(const mc_wl_gpu *g, int slot);       /* one slot, after mc_gpu_step_end */
/* Blocking copy of bytes from the host (the GPU check's data). */
void mc_gpu_from_host(mc_wl_gpu *g, void *dev, const void *host, uint64_t bytes);
/* Blocking reads (the GradScaler's .item(); the GPU check). */
float mc_gpu_read_scalar(mc_wl_gpu *g, const float *p);
void mc_gpu_write_scalar(mc_wl_gpu *g, float *p, float v);
void mc_gpu_to_host(mc_wl_gpu *g, float *host, const void *dev, int64_t n, int dt);

/* --- pinned host memory (the Transformer's --offload: saved activations
 * kept on the host). Host memory, not the device allocator's; the copies
 * are asynchronous on the step's stream, so stream order keeps them safe:
 * a device block freed after a D2H is reused only by later work, and a
 * pinned buffer is reused only by a later D2H. */
void *mc_gpu_pinned_alloc(uint64_t bytes);                               /* cudaHostAlloc */
void mc_gpu_pinned_free(void *host);                                     /* cudaFreeHost */
void mc_gpu_to_pinned(mc_wl_gpu *g, void *host, const void *dev, uint64_t bytes);   /* D2H */
void mc_gpu_from_pinned(mc_wl_gpu *g, void *dev, const void *host, uint64_t bytes); /* H2D */

#ifdef __cplusplus
}
#endif
#endif
