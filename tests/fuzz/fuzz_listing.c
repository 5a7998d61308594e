/* libFuzzer target: a fuzzed listing of a lock path (names separated by
 * '\n'; the first byte picks our own node and the recipe, the second the
 * semaphore's limit and need) goes through what the engine does: parse,
 * sort by sequence then name (lib/engine/core/decide.c's
 * zkl__decide_contenders()), then each recipe's
 * policy. Invariants: our own node is found; a node that does not hold
 * watches a node of the listing, before itself (outside a semaphore's
 * watch group, whose members are leases); the first node of a mutex or a
 * write lock holds, and only it; a reader holds exactly when no other kind
 * is before it; the semaphore's gate holder watches only leases.
 * The policies come from lib/kit/kit.h. */
#include <stdlib.h>
#include <string.h>

#include "kit.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define MAXN 64

static int cmp(const void *a, const void *b)
{
    const zkl__entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned sel = data[0], lim = data[1];
    char *buf = malloc(size - 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 2, size - 2);
    buf[size - 2] = '\0';
    char *names[MAXN];
    size_t nn = 0;
    for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t && nn < MAXN;
         t = strtok_r(NULL, "\n", &save)) {
        size_t j = 0;
        while (j < nn && strcmp(names[j], t) != 0)
            j++;
        if (j == nn)
            names[nn++] = t; /* children of one parent have distinct names */
    }
    zkl__entry cs[MAXN];
    size_t k = 0;
    for (size_t i = 0; i < nn; i++)
        if (zkl__entry_parse(names[i], &cs[k]) == 0)
            k++;
    if (k == 0) {
        free(buf);
        return 0;
    }
    qsort(cs, k, sizeof cs[0], cmp);
    for (size_t i = 1; i < k; i++)
        if (cs[i - 1].seq > cs[i].seq)
            abort();
    const char *own = cs[(sel >> 2) % k].name;
    size_t self = k;
    for (size_t i = 0; i < k; i++)
        if (cs[i].name == own)
            self = i;
    if (self == k)
        abort();
    bool downgrade = false;
    struct zkl__gate_arg ga = {1 + (int)(lim & 7), 1 + (int)((lim >> 3) & 7)};
    const zkl__policy *pols[] = {&zkl__lock_policy, &zkl__write_policy, &zkl__read_policy,
                                 &zkl__gate_policy};
    const zkl__policy *p = pols[sel & 3];
    const void *arg = p == &zkl__gate_policy ? (const void *)&ga : (const void *)&downgrade;
    size_t w = (size_t)-1;
    bool holds = p->holds(cs, k, self, &w, arg);
    if (!holds) {
        if (w >= k)
            abort();
        bool group = p->watch_group && p->watch_group(&cs[w], arg);
        if (!group && w >= self)
            abort();
        if (group && zkl__lease_count(&cs[w]) <= 0)
            abort();
    }
    if (p == &zkl__lock_policy || p == &zkl__write_policy) {
        if (holds != (self == 0) || (!holds && w != self - 1))
            abort();
    } else if (p == &zkl__read_policy) {
        bool other = false;
        for (size_t i = 0; i < self; i++)
            other |= !zkl__entry_is(&cs[i], "__READ__");
        if (holds == other)
            abort();
    } else {
        bool waiter = false;
        for (size_t i = 0; i < self; i++)
            waiter |= zkl__entry_is(&cs[i], "zkl-wait-");
        if (waiter && holds)
            abort();
    }
    free(buf);
    return 0;
}
