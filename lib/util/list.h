/* Intrusive lists: the engine's nodes, requests and leases sit on several
 * lists at once, each through its own pair of link fields, so the links
 * are named at each use. Included by internal.h. */
#ifndef ZKL_LIST_H
#define ZKL_LIST_H

/* Put n first in the doubly linked list `head`, through n->prev / n->next. */
#define ZKL__DLIST_PUSH(head, n, prev, next)                                                       \
    do {                                                                                           \
        (n)->prev = NULL;                                                                          \
        (n)->next = (head);                                                                        \
        if ((head) != NULL)                                                                        \
            (head)->prev = (n);                                                                    \
        (head) = (n);                                                                              \
    } while (0)

/* Take n out of the doubly linked list `head` and clear its links. n must
 * be on it, or be its own list's lone node with both links NULL and not
 * first (then nothing changes). */
#define ZKL__DLIST_UNLINK(head, n, prev, next)                                                     \
    do {                                                                                           \
        if ((n)->prev != NULL)                                                                     \
            (n)->prev->next = (n)->next;                                                           \
        else if ((head) == (n))                                                                    \
            (head) = (n)->next;                                                                    \
        if ((n)->next != NULL)                                                                     \
            (n)->next->prev = (n)->prev;                                                           \
        (n)->prev = (n)->next = NULL;                                                              \
    } while (0)

/* Take n out of the singly linked list head..tail of `type`, if it is on
 * it (a walk: these lists are short, a dispatch round's worth). */
#define ZKL__SLIST_REMOVE(type, head, tail, n, next)                                               \
    do {                                                                                           \
        type *p_ = NULL;                                                                           \
        for (type *x_ = (head); x_ != NULL; p_ = x_, x_ = x_->next) {                              \
            if (x_ == (n)) {                                                                       \
                if (p_ != NULL)                                                                    \
                    p_->next = (n)->next;                                                          \
                else                                                                               \
                    (head) = (n)->next;                                                            \
                if ((tail) == (n))                                                                 \
                    (tail) = p_;                                                                   \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#endif
