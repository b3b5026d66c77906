/* convert.c: build/whatif's snapshots made traces (whatif.h): every
 * scripts/snapshot2trace at once, each trace parsed. snapshot2trace reads a
 * snapshot gzipped or not within its size limit (not gzip -dc here, which
 * would write a bomb out whole); its refusal (exit 2) names the user's
 * snapshot and says why in one line: that line, exit 2. Any other failure
 * is the tool's: exit 1 with its last line. */
#include "subprocess.h"
#include "whatif.h"

void wi_convert(const wi_options *o, const char *convert_path, const char *const *paths, size_t n, ca_trace *t,
                char **trace_path, char **log)
{
    pid_t pid[CA_BATCH_MAX_POINTS];
    int rc[CA_BATCH_MAX_POINTS];
    char *device = wi_fmt("%d", o->device);
    for (size_t k = 0; k < n; k++) {
        trace_path[k] = wi_fmt("%s/run-%zu.trace", wi_work, k);
        log[k] = wi_fmt("%s/logs/snapshot2trace-%zu.log", wi_work, k);
        char *argv[] = {(char *)convert_path, "--replay", wi_replay_beside(), "--device", device, "--",
                        (char *)paths[k], NULL};
        pid[k] = mc_spawn(argv, trace_path[k], log[k]);
    }
    for (size_t k = 0; k < n; k++) rc[k] = mc_spawn_wait(pid[k]);
    wi_stop_if_interrupted();
    for (size_t k = 0; k < n; k++) {
        if (rc[k] == 2) {
            const char *why = wi_log_line(log[k], false);
            if (*why) wi_die(2, "%s", why);
            wi_die(2, "'%s': snapshot2trace refused it without a message", paths[k]);
        }
        if (rc[k] != 0)
            wi_die(1, "scripts/snapshot2trace failed on '%s' (exit %d): %s", paths[k], rc[k],
                   wi_log_line(log[k], true));
    }
    for (size_t k = 0; k < n; k++) {
        char err[512];
        if (ca_trace_load(&t[k], trace_path[k], err, sizeof err) != 0)
            wi_die(2, "'%s': the replay's parser refuses the trace snapshot2trace made of it (%s)", paths[k],
                   wi_trace_reason(err, trace_path[k]));
    }
}
