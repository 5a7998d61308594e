/* Memory, the generator, string hashing and index sets of the model. */
#include <stdarg.h>

#include "sim.h"

static void out_of_memory(void)
{
    fputs("zsim: out of memory\n", stderr);
    abort();
}

void *sim_alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

void *sim_grow(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

char *sim_memdup(const char *s, size_t n)
{
    char *p = sim_grow(NULL, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *sim_strdup(const char *s)
{
    return sim_memdup(s, strlen(s));
}

/* splitmix64 spreads the seed over xoshiro256**'s state, which then never
 * is all zero. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Rejection keeps it exactly uniform: a draw in the last, partial run of n
 * is thrown away. */
uint64_t rng_below(struct rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}

uint64_t sim_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static void ptab_grow(struct ptab *t)
{
    size_t cap = t->tab ? (t->mask + 1) * 2 : 16;
    struct pslot *tab = sim_alloc(cap * sizeof *tab);
    PTAB_EACH(t, i)
    {
        size_t j = t->tab[i].hash & (cap - 1);
        while (tab[j].p)
            j = (j + 1) & (cap - 1);
        tab[j] = t->tab[i];
    }
    free(t->tab);
    t->tab = tab;
    t->mask = cap - 1;
}

void ptab_put(struct ptab *t, uint64_t hash, void *p)
{
    if (t->tab == NULL || (t->count + 1) * 4 > (t->mask + 1) * 3)
        ptab_grow(t);
    size_t j = hash & t->mask;
    while (t->tab[j].p)
        j = (j + 1) & t->mask;
    t->tab[j] = (struct pslot){hash, p};
    t->count++;
}

void ptab_del(struct ptab *t, uint64_t hash, const void *p)
{
    size_t j = hash & t->mask;
    while (t->tab[j].p != p)
        j = (j + 1) & t->mask;
    /* Move later members of the run into the hole when their home slot
     * does not lie between the hole and them. */
    size_t hole = j;
    for (size_t k = (j + 1) & t->mask; t->tab[k].p; k = (k + 1) & t->mask) {
        size_t home = t->tab[k].hash & t->mask;
        bool movable = hole <= k ? (home <= hole || home > k) : (home <= hole && home > k);
        if (movable) {
            t->tab[hole] = t->tab[k];
            hole = k;
        }
    }
    t->tab[hole] = (struct pslot){0, NULL};
    t->count--;
}

void *ptab_find(const struct ptab *t, uint64_t hash,
                bool (*eq)(const void *p, const void *key, size_t n), const void *key, size_t n)
{
    if (t->tab == NULL)
        return NULL;
    for (size_t j = hash & t->mask; t->tab[j].p; j = (j + 1) & t->mask)
        if (t->tab[j].hash == hash && eq(t->tab[j].p, key, n))
            return t->tab[j].p;
    return NULL;
}

void ptab_free(struct ptab *t)
{
    free(t->tab);
    memset(t, 0, sizeof *t);
}

void iset_add(struct iset *s, int32_t x)
{
    if ((size_t)x >= s->npos) {
        size_t n = s->npos ? s->npos : 16;
        while (n <= (size_t)x)
            n *= 2;
        s->pos = sim_grow(s->pos, n * sizeof *s->pos);
        for (size_t i = s->npos; i < n; i++)
            s->pos[i] = -1;
        s->npos = n;
    }
    if (s->pos[x] >= 0)
        return;
    SIM_GROW(s->v, s->n, s->cap);
    s->pos[x] = (int32_t)s->n;
    s->v[s->n++] = x;
}

void iset_del(struct iset *s, int32_t x)
{
    if ((size_t)x >= s->npos || s->pos[x] < 0)
        return;
    int32_t i = s->pos[x];
    int32_t last = s->v[--s->n];
    s->v[i] = last;
    s->pos[last] = i;
    s->pos[x] = -1;
}

bool iset_has(const struct iset *s, int32_t x)
{
    return (size_t)x < s->npos && s->pos[x] >= 0;
}

void iset_free(struct iset *s)
{
    free(s->v);
    free(s->pos);
    memset(s, 0, sizeof *s);
}

void sim_trace(zsim_world *w, const char *fmt, ...)
{
    if (w->trace_fn == NULL)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "%lld.%06lld ", (long long)(w->now / 1000000000),
                     (long long)(w->now % 1000000000 / 1000));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    w->trace_fn(w->trace_arg, line);
}
