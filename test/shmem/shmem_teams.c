/*
 * shmem_teams.c: teams (OpenSHMEM 1.5).
 *
 * SHMEM_TEAM_WORLD: team_my_pe / team_n_pes equal shmem_my_pe / shmem_n_pes.
 * SHMEM_TEAM_SHARED: all PEs run on one node here, so it has every PE (this
 * is an assumption of the test setup, checked), and shmem_ptr works for each
 * member: every PE stores through the pointer into every member's heap.
 * shmem_team_split_strided from WORLD: evens, odds, one PE (stride 1 and
 * stride 0), the whole world, the tail 1..npes-1, stride 3; from SHARED; a
 * split of a split; an invalid triplet (nonzero return on every PE, handle
 * SHMEM_TEAM_INVALID). For each team: size, my_pe, members' order through
 * shmem_team_translate_pe in both directions, -1 for a PE outside the team,
 * for an index out of range and for SHMEM_TEAM_INVALID; non-members get
 * SHMEM_TEAM_INVALID. Collectives on each split team (team_sync loop,
 * broadcast from every root, fcollect, collect, sum/max/min reductions,
 * alltoall), checked against the expected members.
 * shmem_team_split_2d with xrange 1, 2, 3 and npes + 1: sizes and member
 * order of the x team (a row: consecutive parent PEs) and of the y team (a
 * column: parent PEs x, x + xrange, ...), my_pe = x and y coordinates, and
 * collectives on both.
 * Contexts from teams: shmem_team_create_ctx, then put, p, get, g and atomics
 * on the context with TEAM-RELATIVE PE numbers (a put to team PE 1 lands on
 * the world PE that is team PE 1, and nowhere else); shmem_ctx_get_team for
 * team contexts, SHMEM_CTX_DEFAULT, shmem_ctx_create contexts and
 * SHMEM_CTX_INVALID; shmem_team_create_ctx on SHMEM_TEAM_INVALID fails.
 * shmem_team_get_config with SHMEM_TEAM_NUM_CONTEXTS. Creating and destroying
 * teams in a loop (150 times: far more than any fixed table of teams, so
 * their resources must be reused), and 20 teams alive at once.
 */
#define TEST_HAS_V15_PARTS 1
#include "shmem_test.h"

static int me, npes;

#if SHMEM_TEST_V15

/* Symmetric heap objects (allocated by every PE at the start). */
static long *tsrc, *tdst;  /* TBUF longs each: team collectives */
static long *tslots;       /* 2 * npes: team_sync loops */
static long *shared_words; /* npes: stores through shmem_ptr */
static long *cslot;        /* npes: context puts */
static long *ccount;       /* 2: context atomics */
static long *ident;        /* 1: 5000 + world PE */
#define TBUF 4096

/** Members of a team, as world PE numbers in team order. */
typedef struct {
    int n;
    int pe[256];
} members_t;

static int member_index(const members_t *m, int pe)
{
    for (int i = 0; i < m->n; ++i) {
        if (m->pe[i] == pe) {
            return i;
        }
    }
    return -1;
}

/** Members start, start + stride, ... (size of them) of a team whose members are `parent`. */
static members_t strided(const members_t *parent, int start, int stride, int size)
{
    members_t m;
    m.n = size;
    for (int i = 0; i < size; ++i) {
        m.pe[i] = parent->pe[start + stride * i];
    }
    return m;
}

static members_t world_members(void)
{
    members_t m;
    m.n = npes;
    for (int i = 0; i < npes; ++i) {
        m.pe[i] = i;
    }
    return m;
}

/*
 * check_team: t must be the team of the members m (world PE numbers, in team
 * order) on members and SHMEM_TEAM_INVALID elsewhere.
 */
static void check_team(shmem_team_t t, const members_t *m, const char *what)
{
    const int idx = member_index(m, me);
    if (idx < 0) {
        CHECK(t == SHMEM_TEAM_INVALID,
              "%s: PE %d is not a member but its handle is not "
              "SHMEM_TEAM_INVALID",
              what, me);
        CHECK(shmem_team_my_pe(t) == -1, "%s: shmem_team_my_pe(SHMEM_TEAM_INVALID) is not -1",
              what);
        CHECK(shmem_team_n_pes(t) == -1, "%s: shmem_team_n_pes(SHMEM_TEAM_INVALID) is not -1",
              what);
        return;
    }
    CHECK(t != SHMEM_TEAM_INVALID, "%s: member PE %d got SHMEM_TEAM_INVALID", what, me);
    CHECK(shmem_team_n_pes(t) == m->n, "%s: shmem_team_n_pes is %d, expected %d", what,
          shmem_team_n_pes(t), m->n);
    CHECK(shmem_team_my_pe(t) == idx, "%s: shmem_team_my_pe is %d, expected %d", what,
          shmem_team_my_pe(t), idx);
    for (int i = 0; i < m->n; ++i) {
        int w = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
        CHECK(w == m->pe[i], "%s: team PE %d translates to world PE %d, expected %d", what, i, w,
              m->pe[i]);
        int back = shmem_team_translate_pe(SHMEM_TEAM_WORLD, m->pe[i], t);
        CHECK(back == i, "%s: world PE %d translates to team PE %d, expected %d", what, m->pe[i],
              back, i);
    }
    for (int p = 0; p < npes; ++p) {
        if (member_index(m, p) < 0) {
            int r = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, t);
            CHECK(r == -1, "%s: world PE %d is not a member, but translates to team PE %d", what, p,
                  r);
        }
    }
    int r = shmem_team_translate_pe(t, m->n, SHMEM_TEAM_WORLD);
    CHECK(r == -1, "%s: team PE %d (out of range) translates to %d, expected -1", what, m->n, r);
    r = shmem_team_translate_pe(t, -1, SHMEM_TEAM_WORLD);
    CHECK(r == -1, "%s: team PE -1 translates to %d, expected -1", what, r);
    r = shmem_team_translate_pe(t, 0, SHMEM_TEAM_INVALID);
    CHECK(r == -1, "%s: translating to SHMEM_TEAM_INVALID gave %d, expected -1", what, r);
    r = shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, t);
    CHECK(r == -1, "%s: translating from SHMEM_TEAM_INVALID gave %d, expected -1", what, r);
    /* The team to itself: the identity. */
    for (int i = 0; i < m->n; ++i) {
        r = shmem_team_translate_pe(t, i, t);
        CHECK(r == i, "%s: team PE %d translates to itself as %d", what, i, r);
    }
}

/*
 * team_colls: collectives on team t (members m); called by the members only.
 * Every step synchronizes the team first (its buffers are ready everywhere).
 */
static void team_colls(shmem_team_t t, const members_t *m, const char *what)
{
    const int idx = shmem_team_my_pe(t);
    const int n = m->n;
    int rc;

    /* team_sync loop: everyone puts k+1 into its slot on every member. */
    for (int k = 0; k < 20; ++k) {
        long *row = tslots + (k % 2) * npes;
        for (int j = 0; j < n; ++j) {
            shmem_long_p(&row[idx], (long)k + 1, m->pe[(idx + j) % n]);
        }
        shmem_quiet();
        rc = shmem_team_sync(t);
        CHECK(rc == 0, "%s: shmem_team_sync returned %d", what, rc);
        for (int j = 0; j < n; ++j) {
            CHECK(row[j] == (long)k + 1,
                  "%s: after shmem_team_sync #%d slot of team PE %d is "
                  "%ld",
                  what, k, j, row[j]);
        }
    }

    /* broadcast from every root */
    for (int r = 0; r < n; ++r) {
        for (int i = 0; i < 3; ++i) {
            tsrc[i] = (long)me * 1000 + r * 10 + i;
            tdst[i] = -1;
        }
        shmem_team_sync(t);
        rc = shmem_long_broadcast(t, tdst, tsrc, 3, r);
        CHECK(rc == 0, "%s: shmem_long_broadcast returned %d", what, rc);
        for (int i = 0; i < 3; ++i) {
            CHECK(tdst[i] == (long)m->pe[r] * 1000 + r * 10 + i,
                  "%s: broadcast from team PE %d: element %d is %ld, expected %ld", what, r, i,
                  tdst[i], (long)m->pe[r] * 1000 + r * 10 + i);
        }
    }

    /* fcollect of the world PE numbers: the member list */
    tsrc[0] = me;
    for (int j = 0; j <= n; ++j) {
        tdst[j] = -1;
    }
    shmem_team_sync(t);
    rc = shmem_long_fcollect(t, tdst, tsrc, 1);
    CHECK(rc == 0, "%s: shmem_long_fcollect returned %d", what, rc);
    for (int j = 0; j < n; ++j) {
        CHECK(tdst[j] == m->pe[j], "%s: fcollect element %d is %ld, expected world PE %d", what, j,
              tdst[j], m->pe[j]);
    }
    CHECK(tdst[n] == -1, "%s: fcollect wrote past its dest", what);

    /* collect: team PE j contributes j % 3 elements */
    size_t total = 0;
    for (int j = 0; j < n; ++j) {
        total += (size_t)(j % 3);
    }
    for (int e = 0; e < idx % 3; ++e) {
        tsrc[e] = (long)me * 100 + e;
    }
    for (size_t j = 0; j <= total; ++j) {
        tdst[j] = -1;
    }
    shmem_team_sync(t);
    rc = shmem_long_collect(t, tdst, tsrc, (size_t)(idx % 3));
    CHECK(rc == 0, "%s: shmem_long_collect returned %d", what, rc);
    size_t at = 0;
    for (int j = 0; j < n; ++j) {
        for (int e = 0; e < j % 3; ++e, ++at) {
            CHECK(tdst[at] == (long)m->pe[j] * 100 + e,
                  "%s: collect element %d of team PE %d is %ld", what, e, j, tdst[at]);
        }
    }
    CHECK(tdst[total] == -1, "%s: collect wrote past its dest", what);

    /* reductions over the world PE numbers and the team PE numbers */
    long sum_w = 0, max_w = -1, min_w = 1L << 40;
    for (int j = 0; j < n; ++j) {
        sum_w += m->pe[j];
        max_w = m->pe[j] > max_w ? m->pe[j] : max_w;
        min_w = m->pe[j] < min_w ? m->pe[j] : min_w;
    }
    tsrc[0] = me;
    tsrc[1] = idx;
    shmem_team_sync(t);
    rc = shmem_long_sum_reduce(t, tdst, tsrc, 2);
    CHECK(rc == 0, "%s: shmem_long_sum_reduce returned %d", what, rc);
    CHECK(tdst[0] == sum_w && tdst[1] == (long)n * (n - 1) / 2,
          "%s: sum_reduce gave %ld, %ld; expected %ld, %ld", what, tdst[0], tdst[1], sum_w,
          (long)n * (n - 1) / 2);
    shmem_team_sync(t);
    rc = shmem_long_max_reduce(t, tdst, tsrc, 2);
    CHECK(rc == 0 && tdst[0] == max_w && tdst[1] == n - 1,
          "%s: max_reduce gave %ld, %ld (rc %d); expected %ld, %d", what, tdst[0], tdst[1], rc,
          max_w, n - 1);
    shmem_team_sync(t);
    rc = shmem_long_min_reduce(t, tdst, tsrc, 2);
    CHECK(rc == 0 && tdst[0] == min_w && tdst[1] == 0,
          "%s: min_reduce gave %ld, %ld (rc %d); expected %ld, 0", what, tdst[0], tdst[1], rc,
          min_w);

    /* alltoall: element j goes to team PE j */
    for (int j = 0; j < n; ++j) {
        tsrc[j] = (long)me * 100 + j;
        tdst[j] = -1;
    }
    tdst[n] = -1;
    shmem_team_sync(t);
    rc = shmem_long_alltoall(t, tdst, tsrc, 1);
    CHECK(rc == 0, "%s: shmem_long_alltoall returned %d", what, rc);
    for (int j = 0; j < n; ++j) {
        CHECK(tdst[j] == (long)m->pe[j] * 100 + idx,
              "%s: alltoall element from team PE %d is %ld, expected %ld", what, j, tdst[j],
              (long)m->pe[j] * 100 + idx);
    }
    CHECK(tdst[n] == -1, "%s: alltoall wrote past its dest", what);
    shmem_team_sync(t);
}

/** Split `parent` (members pm; only its members call) and check the new team; returns it. */
static shmem_team_t split_and_check(shmem_team_t parent, const members_t *pm, int start, int stride,
                                    int size, const char *what, members_t *out)
{
    shmem_team_t t = SHMEM_TEAM_WORLD; /* anything but SHMEM_TEAM_INVALID: the call must set it */
    int rc = shmem_team_split_strided(parent, start, stride, size, NULL, 0, &t);
    CHECK(rc == 0, "%s: shmem_team_split_strided(%d, %d, %d) returned %d", what, start, stride,
          size, rc);
    *out = strided(pm, start, stride, size);
    check_team(t, out, what);
    return t;
}

/* ------------------------------------------------------------------ the parts */

static void test_world(void)
{
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "shmem_team_my_pe(SHMEM_TEAM_WORLD) is %d",
          shmem_team_my_pe(SHMEM_TEAM_WORLD));
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "shmem_team_n_pes(SHMEM_TEAM_WORLD) is %d",
          shmem_team_n_pes(SHMEM_TEAM_WORLD));
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "shmem_team_my_pe(SHMEM_TEAM_INVALID) is %d",
          shmem_team_my_pe(SHMEM_TEAM_INVALID));
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "shmem_team_n_pes(SHMEM_TEAM_INVALID) is %d",
          shmem_team_n_pes(SHMEM_TEAM_INVALID));
    members_t w = world_members();
    check_team(SHMEM_TEAM_WORLD, &w, "SHMEM_TEAM_WORLD");
    team_colls(SHMEM_TEAM_WORLD, &w, "SHMEM_TEAM_WORLD");
}

static void test_shared(void)
{
    /* SHMEM_TEAM_SHARED: the PEs this PE reaches with shmem_ptr, in world order
     * (every PE on one node with shared memory; only itself when the PEs reach
     * each other through a network transport, as in the verbs VM). */
    members_t w;
    w.n = 0;
    for (int p = 0; p < npes; ++p) {
        if (shmem_ptr(shared_words, p) != NULL) {
            w.pe[w.n++] = p;
        }
    }
    CHECK(w.n >= 1 && shmem_ptr(shared_words, me) != NULL, "shmem_ptr to this PE is NULL");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == w.n,
          "SHMEM_TEAM_SHARED has %d PEs; %d PEs are reachable with shmem_ptr",
          shmem_team_n_pes(SHMEM_TEAM_SHARED), w.n);
    check_team(SHMEM_TEAM_SHARED, &w, "SHMEM_TEAM_SHARED");
    for (int p = 0; p < npes; ++p) {
        shared_words[p] = -1;
    }
    shmem_barrier_all();
    for (int i = 0; i < shmem_team_n_pes(SHMEM_TEAM_SHARED); ++i) {
        const int w_pe = shmem_team_translate_pe(SHMEM_TEAM_SHARED, i, SHMEM_TEAM_WORLD);
        long *p = (long *)shmem_ptr(shared_words, w_pe);
        CHECK(p != NULL, "shmem_ptr to SHMEM_TEAM_SHARED member %d (world PE %d) is NULL", i, w_pe);
        __atomic_store_n(&p[me], 77L + me * 3 + w_pe * 1000, __ATOMIC_RELEASE);
    }
    shmem_barrier_all();
    for (int i = 0; i < w.n; ++i) {
        const int p = w.pe[i];
        const long want = 77L + p * 3 + me * 1000;
        CHECK(__atomic_load_n(&shared_words[p], __ATOMIC_ACQUIRE) == want,
              "SHMEM_TEAM_SHARED: word stored by PE %d through shmem_ptr is %ld, expected %ld", p,
              shared_words[p], want);
    }
    team_colls(SHMEM_TEAM_SHARED, &w, "SHMEM_TEAM_SHARED");
    /* A split of SHMEM_TEAM_SHARED. */
    members_t m;
    shmem_team_t t = split_and_check(SHMEM_TEAM_SHARED, &w, 0, 1, w.n, "copy of SHARED", &m);
    team_colls(t, &m, "copy of SHARED");
    shmem_team_destroy(t);
}

static void test_split_strided(void)
{
    const members_t w = world_members();
    struct {
        int start, stride, size;
        const char *what;
    } cases[] = {
        {0, 2, (npes + 1) / 2, "evens"},    {1, 2, npes / 2, "odds"},
        {npes - 1, 1, 1, "last PE alone"},  {npes / 2, 0, 1, "one PE, stride 0"},
        {0, 1, npes, "copy of WORLD"},      {1, 1, npes - 1, "PEs 1.."},
        {0, 3, (npes + 2) / 3, "stride 3"}, {npes - 1, 5, 1, "last PE, stride 5"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        if (cases[c].size < 1) {
            continue; /* odds / PEs 1.. with one PE: no such team */
        }
        members_t m;
        shmem_barrier_all();
        shmem_team_t t = split_and_check(SHMEM_TEAM_WORLD, &w, cases[c].start, cases[c].stride,
                                         cases[c].size, cases[c].what, &m);
        if (t != SHMEM_TEAM_INVALID) {
            team_colls(t, &m, cases[c].what);
        }
        shmem_team_destroy(t); /* SHMEM_TEAM_INVALID on non-members: no operation */
    }

    /* Evens and odds alive together; translate between them: no PE is in both. */
    shmem_barrier_all();
    shmem_team_t ev = SHMEM_TEAM_INVALID, od = SHMEM_TEAM_INVALID;
    members_t me_ev, me_od;
    me_od.n = 0;
    ev = split_and_check(SHMEM_TEAM_WORLD, &w, 0, 2, (npes + 1) / 2, "evens (2)", &me_ev);
    if (npes >= 2) {
        od = split_and_check(SHMEM_TEAM_WORLD, &w, 1, 2, npes / 2, "odds (2)", &me_od);
    }
    shmem_team_t mine = me % 2 == 0 ? ev : od;
    shmem_team_t other = me % 2 == 0 ? od : ev;
    CHECK(mine != SHMEM_TEAM_INVALID && other == SHMEM_TEAM_INVALID,
          "evens/odds: PE %d has the wrong handles", me);
    for (int i = 0; i < shmem_team_n_pes(mine); ++i) {
        CHECK(shmem_team_translate_pe(mine, i, SHMEM_TEAM_INVALID) == -1,
              "translate to SHMEM_TEAM_INVALID is not -1");
    }
    /* Collectives on the two teams at the same time (disjoint members). */
    team_colls(mine, me % 2 == 0 ? &me_ev : &me_od, me % 2 == 0 ? "evens (2)" : "odds (2)");

    /* A split of a split: evens' members 1.. (world PEs 2, 4, ...). */
    if (me % 2 == 0 && me_ev.n >= 2) {
        members_t sub;
        shmem_team_t s = split_and_check(ev, &me_ev, 1, 1, me_ev.n - 1, "evens 1..", &sub);
        if (s != SHMEM_TEAM_INVALID) {
            for (int i = 0; i < sub.n; ++i) {
                int r = shmem_team_translate_pe(s, i, ev);
                CHECK(r == i + 1, "evens 1..: team PE %d is evens PE %d, expected %d", i, r, i + 1);
            }
            CHECK(shmem_team_translate_pe(ev, 0, s) == -1,
                  "evens 1..: evens PE 0 (world 0) translates to %d, expected -1",
                  shmem_team_translate_pe(ev, 0, s));
            team_colls(s, &sub, "evens 1..");
        }
        shmem_team_destroy(s);
    }
    shmem_barrier_all();
    shmem_team_destroy(ev);
    shmem_team_destroy(od);

    /* An invalid triplet: nonzero on every PE, SHMEM_TEAM_INVALID. */
    shmem_barrier_all();
    shmem_team_t bad = SHMEM_TEAM_WORLD;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes + 1, NULL, 0, &bad);
    CHECK(rc != 0, "shmem_team_split_strided(0, 1, npes + 1) returned 0");
    CHECK(bad == SHMEM_TEAM_INVALID, "shmem_team_split_strided(0, 1, npes + 1) gave a team");
    bad = SHMEM_TEAM_WORLD;
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, npes, 1, 1, NULL, 0, &bad);
    CHECK(rc != 0, "shmem_team_split_strided(npes, 1, 1) returned 0");
    CHECK(bad == SHMEM_TEAM_INVALID, "shmem_team_split_strided(npes, 1, 1) gave a team");
    /* The parent SHMEM_TEAM_INVALID: nonzero, SHMEM_TEAM_INVALID. */
    bad = SHMEM_TEAM_WORLD;
    rc = shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &bad);
    CHECK(rc != 0 && bad == SHMEM_TEAM_INVALID,
          "shmem_team_split_strided(SHMEM_TEAM_INVALID, ...) returned %d", rc);
    shmem_barrier_all();
}

static void test_split_2d(void)
{
    const int xranges[] = {1, 2, 3, npes + 1};
    for (size_t c = 0; c < sizeof(xranges) / sizeof(xranges[0]); ++c) {
        const int xr = xranges[c];
        char wx[64], wy[64];
        snprintf(wx, sizeof(wx), "split_2d(xrange %d) x team", xr);
        snprintf(wy, sizeof(wy), "split_2d(xrange %d) y team", xr);
        shmem_barrier_all();
        shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
        int rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &xt, NULL, 0, &yt);
        CHECK(rc == 0, "shmem_team_split_2d(xrange %d) returned %d", xr, rc);
        /* (x, y) = (pe mod xrange, pe div xrange) */
        const int x = me % xr, y = me / xr;
        members_t mx, my;
        mx.n = 0;
        for (int p = y * xr; p < npes && p < (y + 1) * xr; ++p) {
            mx.pe[mx.n++] = p;
        }
        my.n = 0;
        for (int p = x; p < npes; p += xr) {
            my.pe[my.n++] = p;
        }
        check_team(xt, &mx, wx);
        check_team(yt, &my, wy);
        CHECK(shmem_team_my_pe(xt) == x && shmem_team_my_pe(yt) == y,
              "split_2d(xrange %d): my_pe in x team %d, in y team %d; expected %d, %d", xr,
              shmem_team_my_pe(xt), shmem_team_my_pe(yt), x, y);
        team_colls(xt, &mx, wx);
        shmem_barrier_all();
        team_colls(yt, &my, wy);
        shmem_barrier_all();
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
    }
}

/*
 * RMA and atomics on a context of team t (members m), with team PE numbers:
 * team PE i puts to team PE (i + 1) % n, adds to team PE 0, gets from team
 * PE (i + 1) % n. Every PE then checks that exactly the expected words of its
 * own heap were written.
 */
static void team_ctx_rma(shmem_team_t t, const members_t *m, long options, const char *what)
{
    for (int p = 0; p < npes; ++p) {
        cslot[p] = -1;
    }
    ccount[0] = ccount[1] = 0;
    *ident = 5000 + me;
    shmem_barrier_all();
    const int idx = member_index(m, me);
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    if (idx >= 0) {
        int rc = shmem_team_create_ctx(t, options, &ctx);
        CHECK(rc == 0 && ctx != SHMEM_CTX_INVALID, "%s: shmem_team_create_ctx returned %d", what,
              rc);
        shmem_team_t back = SHMEM_TEAM_INVALID;
        rc = shmem_ctx_get_team(ctx, &back);
        CHECK(rc == 0 && back == t, "%s: shmem_ctx_get_team returned %d and another team", what,
              rc);
        const int n = m->n;
        const int next = (idx + 1) % n;
        shmem_ctx_long_p(ctx, &cslot[me], 1000 + me, next);
        long v = 0;
        shmem_ctx_long_get(ctx, &v, ident, 1, next);
        CHECK(v == 5000 + m->pe[next], "%s: get from team PE %d gave %ld, expected %d", what, next,
              v, 5000 + m->pe[next]);
        v = shmem_ctx_long_g(ctx, ident, n - 1);
        CHECK(v == 5000 + m->pe[n - 1], "%s: g from team PE %d gave %ld, expected %d", what, n - 1,
              v, 5000 + m->pe[n - 1]);
        shmem_ctx_long_atomic_add(ctx, &ccount[0], me + 1, 0);
        long old = shmem_ctx_long_atomic_fetch_add(ctx, &ccount[1], 1, n - 1);
        CHECK(old >= 0 && old < n, "%s: fetch_add on team PE %d returned %ld", what, n - 1, old);
        shmem_ctx_quiet(ctx);
    }
    shmem_barrier_all();
    /* What landed here: puts from the team PE before me, atomics if I am team PE 0 / n-1. */
    for (int p = 0; p < npes; ++p) {
        long want = -1;
        if (idx >= 0 && m->pe[(idx + m->n - 1) % m->n] == p) {
            want = 1000 + p;
        }
        CHECK(cslot[p] == want,
              "%s: slot of PE %d on PE %d is %ld, expected %ld (team PE "
              "numbers not translated?)",
              what, p, me, cslot[p], want);
    }
    long sum = 0;
    for (int i = 0; i < m->n; ++i) {
        sum += m->pe[i] + 1;
    }
    const long want0 = idx == 0 ? sum : 0;
    const long want1 = idx == m->n - 1 && idx >= 0 ? m->n : 0;
    CHECK(ccount[0] == want0, "%s: atomic_add total on PE %d is %ld, expected %ld", what, me,
          ccount[0], want0);
    CHECK(ccount[1] == want1, "%s: fetch_add total on PE %d is %ld, expected %ld", what, me,
          ccount[1], want1);
    shmem_barrier_all();
    if (ctx != SHMEM_CTX_INVALID) {
        shmem_ctx_destroy(ctx);
    }
}

static void test_team_ctx(void)
{
    const members_t w = world_members();
    shmem_team_config_t cfg;
    cfg.num_contexts = 2;
    int rc;

    /* The default context, shmem_ctx_create's and SHMEM_CTX_INVALID. */
    shmem_team_t tt = SHMEM_TEAM_INVALID;
    rc = shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &tt);
    CHECK(rc == 0 && tt == SHMEM_TEAM_WORLD,
          "shmem_ctx_get_team(SHMEM_CTX_DEFAULT) returned %d and not SHMEM_TEAM_WORLD", rc);
    shmem_ctx_t c0 = SHMEM_CTX_INVALID;
    rc = shmem_ctx_create(0, &c0);
    CHECK(rc == 0, "shmem_ctx_create returned %d", rc);
    tt = SHMEM_TEAM_INVALID;
    rc = shmem_ctx_get_team(c0, &tt);
    CHECK(rc == 0 && tt == SHMEM_TEAM_WORLD,
          "shmem_ctx_get_team(shmem_ctx_create's) returned %d and not SHMEM_TEAM_WORLD", rc);
    shmem_ctx_destroy(c0);
    tt = SHMEM_TEAM_WORLD;
    rc = shmem_ctx_get_team(SHMEM_CTX_INVALID, &tt);
    CHECK(rc != 0 && tt == SHMEM_TEAM_INVALID,
          "shmem_ctx_get_team(SHMEM_CTX_INVALID) returned %d (or a team)", rc);
    shmem_ctx_t cbad = SHMEM_CTX_DEFAULT;
    rc = shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &cbad);
    CHECK(rc != 0 && cbad == SHMEM_CTX_INVALID,
          "shmem_team_create_ctx(SHMEM_TEAM_INVALID) returned %d (or a context)", rc);

    /* A context of SHMEM_TEAM_WORLD: world numbering. */
    team_ctx_rma(SHMEM_TEAM_WORLD, &w, 0, "context of SHMEM_TEAM_WORLD");

    /* Teams whose numbering differs from the world's. */
    struct {
        int start, stride, size;
        long options;
        const char *what;
    } cases[] = {
        {1, 1, npes - 1, 0, "context of team PEs 1.."},
        {0, 2, (npes + 1) / 2, SHMEM_CTX_PRIVATE, "private context of evens"},
        {1, 2, npes / 2, SHMEM_CTX_SERIALIZED, "serialized context of odds"},
        {npes - 1, 1, 1, 0, "context of the last PE alone"},
        {npes / 2, 1, npes - npes / 2, 0, "context of the upper half"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        if (cases[c].size < 1) {
            continue;
        }
        shmem_barrier_all();
        shmem_team_t t = SHMEM_TEAM_INVALID;
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, cases[c].start, cases[c].stride,
                                      cases[c].size, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &t);
        CHECK(rc == 0, "%s: split returned %d", cases[c].what, rc);
        members_t m = strided(&w, cases[c].start, cases[c].stride, cases[c].size);
        check_team(t, &m, cases[c].what);
        if (member_index(&m, me) < 0) {
            shmem_ctx_t cx = SHMEM_CTX_DEFAULT;
            rc = shmem_team_create_ctx(t, 0, &cx);
            CHECK(rc != 0 && cx == SHMEM_CTX_INVALID,
                  "%s: shmem_team_create_ctx by a non-member returned %d (or a context)",
                  cases[c].what, rc);
        }
        team_ctx_rma(t, &m, cases[c].options, cases[c].what);
        /* A second, shareable context left for shmem_team_destroy to destroy (1.5). */
        shmem_ctx_t keep = SHMEM_CTX_INVALID;
        if (t != SHMEM_TEAM_INVALID) {
            rc = shmem_team_create_ctx(t, 0, &keep);
            CHECK(rc == 0, "%s: second shmem_team_create_ctx returned %d", cases[c].what, rc);
            shmem_ctx_long_p(keep, &cslot[0], 1, 0);
            shmem_ctx_quiet(keep);
        }
        shmem_barrier_all();
        shmem_team_destroy(t);
    }
    shmem_barrier_all();
}

static void test_get_config(void)
{
    shmem_team_config_t out;
    out.num_contexts = -12345;
    int rc = shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &out);
    CHECK(rc == 0 && out.num_contexts >= 0,
          "shmem_team_get_config(SHMEM_TEAM_WORLD) returned %d, num_contexts %d", rc,
          out.num_contexts);
    out.num_contexts = -12345;
    rc = shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &out);
    CHECK(rc != 0, "shmem_team_get_config(SHMEM_TEAM_INVALID) returned 0");

    for (int k = 0; k < 3; ++k) {
        shmem_team_config_t cfg;
        cfg.num_contexts = 3 + k;
        shmem_team_t t = SHMEM_TEAM_INVALID;
        /* k == 2: mask 0, so the defaults (num_contexts 0) */
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, &cfg,
                                      k == 2 ? 0 : SHMEM_TEAM_NUM_CONTEXTS, &t);
        CHECK(rc == 0, "split with a config returned %d", rc);
        out.num_contexts = -12345;
        rc = shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &out);
        const int want = k == 2 ? 0 : 3 + k;
        CHECK(rc == 0 && out.num_contexts == want,
              "shmem_team_get_config: returned %d, num_contexts %d, expected %d", rc,
              out.num_contexts, want);
        shmem_ctx_t ctxs[5];
        for (int i = 0; i < want; ++i) {
            rc = shmem_team_create_ctx(t, 0, &ctxs[i]);
            CHECK(rc == 0, "shmem_team_create_ctx #%d of %d announced returned %d", i, want, rc);
        }
        for (int i = 0; i < want; ++i) {
            shmem_ctx_destroy(ctxs[i]);
        }
        shmem_team_destroy(t);
    }
    /* split_2d with configs */
    shmem_team_config_t xc, yc;
    xc.num_contexts = 1;
    yc.num_contexts = 2;
    shmem_team_t xt, yt;
    rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &xc, SHMEM_TEAM_NUM_CONTEXTS, &xt, &yc,
                             SHMEM_TEAM_NUM_CONTEXTS, &yt);
    CHECK(rc == 0, "split_2d with configs returned %d", rc);
    rc = shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &out);
    CHECK(rc == 0 && out.num_contexts == 1, "x team: num_contexts %d", out.num_contexts);
    rc = shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &out);
    CHECK(rc == 0 && out.num_contexts == 2, "y team: num_contexts %d", out.num_contexts);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_barrier_all();
}

static void test_many_teams(void)
{
    /* Created and destroyed one at a time, 150 times. */
    for (int k = 0; k < 150; ++k) {
        const int start = k % npes;
        const int size = npes - start;
        shmem_team_t t = SHMEM_TEAM_INVALID;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, size, NULL, 0, &t);
        CHECK(rc == 0, "team #%d: shmem_team_split_strided returned %d", k, rc);
        if (me >= start) {
            CHECK(t != SHMEM_TEAM_INVALID && shmem_team_my_pe(t) == me - start &&
                      shmem_team_n_pes(t) == size,
                  "team #%d: my_pe %d, n_pes %d; expected %d, %d", k, shmem_team_my_pe(t),
                  shmem_team_n_pes(t), me - start, size);
            long s = me, r = -1;
            rc = shmem_long_sum_reduce(t, &tdst[0], &tsrc[0], 0); /* nreduce 0 */
            CHECK(rc == 0, "team #%d: sum_reduce of 0 elements returned %d", k, rc);
            tsrc[0] = s;
            shmem_team_sync(t);
            rc = shmem_long_sum_reduce(t, &tdst[0], &tsrc[0], 1);
            r = tdst[0];
            const long want = (long)(start + npes - 1) * size / 2;
            CHECK(rc == 0 && r == want, "team #%d: sum of its world PEs is %ld, expected %ld", k, r,
                  want);
        } else {
            CHECK(t == SHMEM_TEAM_INVALID, "team #%d: non-member got a team", k);
        }
        shmem_team_destroy(t);
    }
    shmem_barrier_all();

    /* 20 alive at once: copies of the world and single PEs, used, destroyed in two rounds. */
    enum { LIVE = 20 };
    shmem_team_t teams[LIVE];
    for (int i = 0; i < LIVE; ++i) {
        const int single = i % 2;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, single ? i % npes : 0, 1,
                                          single ? 1 : npes, NULL, 0, &teams[i]);
        CHECK(rc == 0, "live team #%d: split returned %d", i, rc);
    }
    for (int i = LIVE - 1; i >= 0; --i) {
        const int single = i % 2;
        if (single && me != i % npes) {
            CHECK(teams[i] == SHMEM_TEAM_INVALID, "live team #%d: non-member got a team", i);
            continue;
        }
        tsrc[0] = (long)i * 1000 + me;
        shmem_team_sync(teams[i]);
        int rc = shmem_long_max_reduce(teams[i], tdst, tsrc, 1);
        const long want = (long)i * 1000 + (single ? me : npes - 1);
        CHECK(rc == 0 && tdst[0] == want, "live team #%d: max_reduce gave %ld, expected %ld", i,
              tdst[0], want);
        shmem_team_sync(teams[i]);
    }
    for (int i = 0; i < LIVE; i += 2) {
        shmem_team_destroy(teams[i]);
    }
    shmem_barrier_all();
    for (int i = 1; i < LIVE; i += 2) {
        shmem_team_destroy(teams[i]);
    }
    shmem_barrier_all();
}

#endif /* SHMEM_TEST_V15 */

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= 256, "this test handles up to 256 PEs");

#if SHMEM_TEST_V15
    tsrc = (long *)shmem_malloc(TBUF * sizeof(long));
    tdst = (long *)shmem_malloc(TBUF * sizeof(long));
    tslots = (long *)shmem_malloc(2 * (size_t)npes * sizeof(long));
    shared_words = (long *)shmem_malloc((size_t)npes * sizeof(long));
    cslot = (long *)shmem_malloc((size_t)npes * sizeof(long));
    ccount = (long *)shmem_malloc(2 * sizeof(long));
    ident = (long *)shmem_malloc(sizeof(long));
    CHECK(tsrc && tdst && tslots && shared_words && cslot && ccount && ident,
          "shmem_malloc failed");
    memset(tslots, 0, 2 * (size_t)npes * sizeof(long));
    shmem_barrier_all();

    test_section("SHMEM_TEAM_WORLD");
    test_world();
    test_section("SHMEM_TEAM_SHARED");
    test_shared();
    test_section("shmem_team_split_strided");
    test_split_strided();
    test_section("shmem_team_split_2d");
    test_split_2d();
    test_section("contexts of teams");
    test_team_ctx();
    test_section("shmem_team_get_config");
    test_get_config();
    test_section("many teams");
    test_many_teams();

    shmem_barrier_all();
    shmem_free(ident);
    shmem_free(ccount);
    shmem_free(cslot);
    shmem_free(shared_words);
    shmem_free(tslots);
    shmem_free(tdst);
    shmem_free(tsrc);
#endif
    return test_pass("shmem_teams");
}
