/* What collecting lock metrics costs zkl, measured on a workload. */
#include <stdlib.h>

#include "bench.h"

/* --metrics-ab N: the workload N times on sessions that collect metrics
 * and N times on sessions that do not, alternating (which goes first
 * alternates too, so drift over the run hits both alike); one JSON line
 * with the medians and their ratio. */
int metrics_ab(const struct opts *o, const struct workload *w, int nsessions)
{
    struct run on = {.o = o}, off = {.o = o};
    on.cs = xcalloc((size_t)nsessions, sizeof *on.cs);
    off.cs = xcalloc((size_t)nsessions, sizeof *off.cs);
    on.ncs = off.ncs = nsessions;
    for (int i = 0; i < nsessions; i++) {
        on.cs[i] = open_client_metrics(o, true);
        off.cs[i] = open_client_metrics(o, false);
    }
    zkl_client *admin = on.cs[0];
    client_delete_tree(admin, o->path);
    int n = o->metrics_ab;
    double *tput[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    double *p50[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    double *cpu[2] = {xcalloc((size_t)n, sizeof(double)), xcalloc((size_t)n, sizeof(double))};
    char sub[1100];
    struct result res;
    if (o->warmup > 0) {
        for (int k = 0; k < 2; k++) {
            snprintf(sub, sizeof sub, "%s/warmup%d", o->path, k);
            client_ensure_path(admin, sub);
            run_once(k == 0 ? &on : &off, w, sub, o->warmup, &res);
            free(res.lat);
        }
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 2; j++) {
            int k = (i + j) % 2; /* 0: metrics on, 1: off */
            snprintf(sub, sizeof sub, "%s/pass%d-%d", o->path, i, k);
            client_ensure_path(admin, sub);
            int64_t c0 = cpu_ns();
            run_once(k == 0 ? &on : &off, w, sub, o->ops, &res);
            cpu[k][i] = (double)(cpu_ns() - c0) / 1e3 / res.ops;
            qsort(res.lat, (size_t)res.ops, sizeof *res.lat, cmp_i64);
            tput[k][i] = res.ops / ((double)res.elapsed_ns / 1e9);
            p50[k][i] = (double)percentile_us(res.lat, res.ops, 0.50);
            fprintf(stderr, "%s: pass %d metrics %s: %.1f ops/s, p50 %.0f us, cpu %.2f us/op\n",
                    zkl_bench_prog, i, k == 0 ? "on" : "off", tput[k][i], p50[k][i], cpu[k][i]);
            free(res.lat);
        }
    }
    client_delete_tree(admin, o->path);
    /* Each pass's on/off pair ran back to back: the median of their ratios
     * is the least disturbed by a machine whose load drifts. */
    double *pair = xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++)
        pair[i] = tput[0][i] / tput[1][i];
    double pair_ratio = median(pair, n);
    free(pair);
    double ton = median(tput[0], n), toff = median(tput[1], n); /* sorts them */
    double pon = median(p50[0], n), poff = median(p50[1], n);
    double con = median(cpu[0], n), coff = median(cpu[1], n);
    printf("{\"impl\":\"zkl\",\"workload\":\"%s\",\"clients\":%d,\"ops\":%d,"
           "\"metrics_ab_passes\":%d",
           o->workload, o->clients, o->ops, n);
    json_num("on_ops_per_sec_median", ton, 1);
    json_num("off_ops_per_sec_median", toff, 1);
    json_num("throughput_ratio_on_off", ton / toff, 4);
    json_num("metrics_cost_pct", (1 - ton / toff) * 100, 2);
    json_num("paired_throughput_ratio_median", pair_ratio, 4);
    json_num("on_p50_us_median", pon, 1);
    json_num("off_p50_us_median", poff, 1);
    json_num("on_cpu_us_per_op_median", con, 2);
    json_num("off_cpu_us_per_op_median", coff, 2);
    json_num("cpu_ratio_on_off", con / coff, 4);
    printf("}\n");
    fflush(stdout);
    for (int k = 0; k < 2; k++) {
        free(tput[k]);
        free(p50[k]);
        free(cpu[k]);
    }
    for (int i = 0; i < nsessions; i++) {
        zkl_client_close(on.cs[i]);
        zkl_client_close(off.cs[i]);
    }
    free(on.cs);
    free(off.cs);
    return 0;
}
