/*
 * Spin model of weft's credit-based flow control (src/proto/credits.hpp,
 * docs/credits.md). Run by test/proto/run_spin.sh in make check.
 *
 * One process per (endpoint, peer) pair plays what the protocol engine does
 * with that peer's credit_state: send data, receive (data or explicit update),
 * release a received message, send an explicit update. Spin interleaves them in
 * every order, so the model covers receivers that release at once, late, or
 * only after sending until blocked (both peers exhausting their credits before
 * receiving anything). Channels are lossless FIFOs.
 *
 * The variables map one to one to the C++ fields, indexed by state S(me, peer):
 *   send_credits[s]  credit_state::send_credits_
 *   recv_credits[s]  credit_state::recv_credits_
 *   held[s]          credit_state::held_
 *   returnable[s]    credit_state::returnable_
 *   window[s]        credit_state::window_
 *   hungry[s]        credit_state::flags_ & flag_hungry
 *   pool_free[me]    credit_pool::free_
 *   pool_hungry[me]  credit_pool::hungry_
 * and the constants INIT, W, T, STEP, POOL_SIZE to credit_pool::initial_,
 * window_, threshold_, grant_step_, total_ (threshold_ and initial_ of every
 * credit_state are copies of the pool's). The inline functions below are the
 * C++ member functions of the same names; keep them in step.
 *
 * Properties (checked by run_spin.sh):
 *  - safety (pan -DSAFETY): no overrun (a message never arrives when the
 *    receiver's recv_credits cannot pay for it), the conservation invariant
 *    recv_credits + held + returnable == window, the pool never grants more
 *    than it has (pool_free + sum of windows == POOL_SIZE), a message sent on
 *    its last credit always returns credits, and no invalid end state: a pair
 *    process may only end when it has sent and received all its N messages, so
 *    a deadlock (nothing enabled, messages undelivered) is an error.
 *  - no ack storm (pan -DNP, -l): no cycle at all. The counters of data
 *    messages only grow, so a cycle could only be explicit updates answering
 *    each other forever. No cycles and no invalid end states together mean that
 *    every execution ends with every message delivered.
 *
 * Configuration (spin -D...):
 *   W          per-peer window; in POOL mode the most one peer may hold (cap)
 *   INIT       initial credits (default W)
 *   T          threshold for explicit updates
 *   N          data messages each pair sends
 *   RDS        1: last-credit rule on (default); 0: off (deadlocks: expected)
 *   POOL       defined: three endpoints; endpoint 2 receives from 0 and 1 through
 *              a shared pool of POOL_SIZE buffers, extra grants of STEP, and
 *              sends NB data messages back to each (default 0: only explicit
 *              updates, which keeps the state space small; the two-endpoint
 *              runs cover data in both directions)
 */

#ifndef W
#define W 3
#endif
#ifndef INIT
#define INIT W
#endif
#ifndef T
#define T 2
#endif
#ifndef N
#define N 4
#endif
#ifndef RDS
#define RDS 1
#endif

#ifdef POOL
#define NP 3
#ifndef POOL_SIZE
#define POOL_SIZE (2 * INIT + 1)
#endif
#ifndef STEP
#define STEP T
#endif
#define SHARED(me) ((me) == 2)
#ifndef NB
#define NB 0
#endif
#define NDATA(me) ((me) == 2 -> NB : N)
#else
#define NP 2
#define POOL_SIZE 0
#define STEP 0
#define SHARED(me) false
#define NDATA(me) N
#endif

#define S(me, peer) ((me) * NP + (peer))
#define NS (NP * NP)

/* credit_verdict */
#define OK 0
#define OK_MUST_CARRY 1
#define BLOCKED 2

mtype = { DATA, UPDATE };

/* credit_state, per S(me, peer) */
byte send_credits[NS];
byte recv_credits[NS];
byte held[NS];
byte returnable[NS];
byte window[NS];
bool hungry[NS];
/* credit_pool, per endpoint (receive side) */
byte pool_free[NP];
byte pool_hungry[NP];

/* Model only: data messages sent from me to peer, and received from peer and released by me. */
byte sent[NS];
byte delivered[NS];

/* ch[S(a, b)] carries a -> b: (kind, credits returned). At most W messages are in flight
 * on a link (each holds a credit), so the capacity never blocks a send; asserted. */
chan ch[NS] = [W] of { mtype, byte };

/* Invariants of one credit_state (and of its endpoint's pool). */
inline check(s, me)
{
    assert(recv_credits[s] + held[s] + returnable[s] == window[s]);
    assert(window[s] <= W);
#ifdef POOL
    if
    :: SHARED(me) ->
        assert(window[s] >= INIT);
        /* the pool never over-grants */
        assert(pool_free[me] + window[S(me, 0)] + window[S(me, 1)] == POOL_SIZE)
    :: else -> skip
    fi
#endif
}

/* credit_state::try_consume(c), with the RDS rule switchable. */
inline try_consume(s, c, verdict)
{
    if
    :: send_credits[s] > c ->
        send_credits[s] = send_credits[s] - c;
        verdict = OK
    :: send_credits[s] == c && (returnable[s] > 0 || !RDS) ->
        send_credits[s] = 0;
        verdict = (returnable[s] > 0 -> OK_MUST_CARRY : OK)
    :: else -> verdict = BLOCKED
    fi
}
#define CAN_CONSUME(s, c) (send_credits[s] > (c) || (send_credits[s] == (c) && (returnable[s] > 0 || !RDS)))

/* credit_state::take_returnable() (counts stay below credit_field_max here). */
inline take_returnable(s, n)
{
    n = returnable[s];
    returnable[s] = 0;
    recv_credits[s] = recv_credits[s] + n
}

/* credit_state::on_credits_returned(n) */
inline on_credits_returned(s, n)
{
    send_credits[s] = send_credits[s] + n
}

/* credit_state::needs_explicit_update() */
#define NEEDS_EXPLICIT_UPDATE(s) (returnable[s] >= T && send_credits[s] > 0)

/* credit_state::take_explicit_update() */
inline take_explicit_update(s, n)
{
    send_credits[s] = send_credits[s] - 1;
    take_returnable(s, n)
}

/* credit_state::grow(pool) */
inline grow(s, me)
{
    k = pool_free[me];
    if
    :: k > STEP -> k = STEP
    :: else -> skip
    fi;
    if
    :: k > W - window[s] -> k = W - window[s]
    :: else -> skip
    fi;
    if
    :: k == 0 ->
        if
        :: !hungry[s] -> hungry[s] = true; pool_hungry[me]++
        :: else -> skip
        fi
    :: else ->
        pool_free[me] = pool_free[me] - k;
        window[s] = window[s] + k;
        returnable[s] = returnable[s] + k;
        if
        :: hungry[s] -> hungry[s] = false; pool_hungry[me]--
        :: else -> skip
        fi
    fi
}

/* credit_state::rebalance(pool) */
inline rebalance(s, me)
{
    if
    :: hungry[s] ->
        if
        :: pool_free[me] != 0 && window[s] < W -> grow(s, me)
        :: else -> skip
        fi
    :: else ->
        k = window[s] - INIT;
        if
        :: k > returnable[s] -> k = returnable[s]
        :: else -> skip
        fi;
        returnable[s] = returnable[s] - k;
        window[s] = window[s] - k;
        pool_free[me] = pool_free[me] + k
    fi
}

/* credit_state::on_message_received(c, pool), overrun asserted */
inline on_message_received(s, me, c)
{
    assert(recv_credits[s] >= c); /* no overrun */
    recv_credits[s] = recv_credits[s] - c;
    held[s] = held[s] + c;
    if
    :: SHARED(me) && recv_credits[s] < T && window[s] < W -> grow(s, me)
    :: else -> skip
    fi
}

/* credit_state::on_released(c, pool) */
inline on_released(s, me, c)
{
    held[s] = held[s] - c;
    returnable[s] = returnable[s] + c;
    if
    :: pool_hungry[me] != 0 -> rebalance(s, me)
    :: else -> skip
    fi
}

/* credit_state::attach(pool) */
inline attach(s, me)
{
    send_credits[s] = INIT;
    recv_credits[s] = INIT;
    if
    :: SHARED(me) ->
        assert(pool_free[me] >= INIT);
        pool_free[me] = pool_free[me] - INIT;
        window[s] = INIT;
        returnable[s] = 0
    :: else ->
        window[s] = W;
        returnable[s] = W - INIT
    fi
}

/* What the engine does for one peer. */
proctype pair(byte me; byte peer)
{
    byte s = S(me, peer);
    byte in = S(peer, me);
    byte n, k, verdict;
    mtype kind;

    do
    :: atomic {
        sent[s] < NDATA(me) && CAN_CONSUME(s, 1) ->
        try_consume(s, 1, verdict);
        assert(verdict != BLOCKED);
        take_returnable(s, n);
        assert(verdict != OK_MUST_CARRY || n > 0); /* the last credit carries credits */
        assert(len(ch[s]) < W);
        ch[s]!DATA, n;
        sent[s]++;
        check(s, me)
    }
    :: atomic {
        nempty(ch[in]) ->
        ch[in]?kind, n;
        on_message_received(s, me, 1);
        on_credits_returned(s, n);
        if
        :: kind == UPDATE -> on_released(s, me, 1) /* on_explicit_update() */
        :: else -> skip
        fi;
        check(s, me)
    }
    :: atomic {
        held[s] > 0 ->
        on_released(s, me, 1);
        delivered[s]++;
        check(s, me)
    }
    :: atomic {
        NEEDS_EXPLICIT_UPDATE(s) ->
        take_explicit_update(s, n);
        assert(n > 0);
        assert(len(ch[s]) < W);
        ch[s]!UPDATE, n;
        check(s, me)
    }
    :: atomic {
        sent[s] == NDATA(me) && delivered[s] == NDATA(peer) -> break
    }
    od
}

init
{
    byte k;
    atomic {
#ifdef POOL
        pool_free[2] = POOL_SIZE;
        attach(S(0, 2), 0);
        attach(S(2, 0), 2);
        attach(S(1, 2), 1);
        attach(S(2, 1), 2);
        run pair(0, 2);
        run pair(2, 0);
        run pair(1, 2);
        run pair(2, 1)
#else
        attach(S(0, 1), 0);
        attach(S(1, 0), 1);
        run pair(0, 1);
        run pair(1, 0)
#endif
    }
}
