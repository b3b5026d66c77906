/* optimizer.h: the optimizers the training workloads model, by one name
 * each (the command lines' words and the CSVs' text): torch.optim's SGD,
 * SGD with momentum, Adam and AdamW, all on their foreach path (the CUDA
 * default). The requests of a step are optimizer_step.h's; the float64
 * references optimizer_ref.h's. */
#ifndef MC_WL_OPTIMIZER_H
#define MC_WL_OPTIMIZER_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MC_WL_SGD, MC_WL_MOMENTUM, MC_WL_ADAM, MC_WL_ADAMW, MC_WL_NOPT } mc_wl_optimizer;

/* "sgd", "momentum", "adam", "adamw"; "?" outside the enum. */
const char *mc_wl_optimizer_name(mc_wl_optimizer o);
/* The optimizer named s among the first ones up to `most` (a model that
 * lacks AdamW passes MC_WL_ADAM): 0, or -1 for any other word. */
int mc_wl_optimizer_parse(const char *s, mc_wl_optimizer most, mc_wl_optimizer *o);
/* The words mc_wl_optimizer_parse takes up to `most`, for an error line:
 * "sgd, momentum or adam". */
const char *mc_wl_optimizer_words(mc_wl_optimizer most);
/* The learning rate the PyTorch references use when none is given: 0.01
 * for SGD and momentum, 1e-3 (torch.optim's default) for Adam and AdamW. */
double mc_wl_optimizer_default_lr(mc_wl_optimizer o);

#ifdef __cplusplus
}
#endif
#endif
