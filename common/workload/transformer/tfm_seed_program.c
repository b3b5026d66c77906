/* tfm_seed_program.c: seed 000's gradient-accumulation program (C07) as the
 * seed writes it (issue 32 item 4; tfm.h mc_tfm_seed000_c07). In one
 * process, as the notebook runs it:
 *
 *   model = torch.nn.Transformer(d_model=256).cuda()      (built on the host)
 *   optimizer = torch.optim.Adam(model.parameters())
 *   large_batch():  reset_peak_memory_stats(); inputs, targets (64, 100, 256);
 *                   loss = MSELoss()(model(inputs, targets), targets)   (no / K)
 *                   loss.backward(); optimizer.step()         (no zero_grad)
 *   gradient_accumulation(): reset_peak_memory_stats(); optimizer.zero_grad();
 *                   4 x { inputs, targets (16, 100, 256); outputs = model(...);
 *                         loss = MSELoss()(outputs, targets) / 4; loss.backward() }
 *                   optimizer.step()                          (no zero_grad)
 *
 * batch_first is False, so (64, 100, 256) is sequence 64 x batch 100 and
 * the micro-steps are sequence 16 x batch 100. Each function's variables
 * live until rebound and the last until it returns, after optimizer.step();
 * the gradients large_batch() leaves are still alive when
 * gradient_accumulation() resets the peak. Each function is one step of the
 * model (mc_tfm_step_as); its peak is what the function returns. */
#include <string.h>

#include "workload/transformer/tfm.h"

#define SEED_BATCH 100   /* dim 1 of (64, 100, 256): batch_first=False */
#define SEED_SEQ 64
#define SEED_MICRO_SEQ 16
#define SEED_ACCUM 4

mc_tfm_config mc_tfm_seed000_c07_config(void)
{
    /* the widest step: large_batch's sequence, 4 micro-step slots */
    mc_tfm_config c = mc_tfm_seed000_accum(SEED_SEQ, (int64_t)SEED_BATCH * SEED_ACCUM);
    c.accum = SEED_ACCUM;
    c.build_host = true;
    return c;
}

int mc_tfm_seed000_c07(mc_tfm *T, mc_workload_step_result out[2])
{
    const mc_tfm_step_shape large_batch = {SEED_SEQ, SEED_BATCH, 1, false, false, false, true};
    const mc_tfm_step_shape gradient_accumulation = {SEED_MICRO_SEQ, SEED_BATCH, SEED_ACCUM, true,
                                                     true, false, true};
    memset(out, 0, 2 * sizeof out[0]);
    mc_tfm_step_as(T, &large_batch, &out[0]);
    mc_tfm_step_as(T, &gradient_accumulation, &out[1]);
    return out[0].status == MC_WL_OK && out[1].status == MC_WL_OK ? 0 : -1;
}
