// Reduction kernels: one loop per (type, op), chosen once when a schedule is
// planned (docs/collectives.md, "Types and operations").

#include <algorithm>
#include <complex>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "collectives/src/coll_impl.hpp"

namespace weft::coll {

void log(const char *level, const char *fmt, ...)
{
    char line[512];
    int n = std::snprintf(line, sizeof(line), "weft coll %s: ", level);
    std::va_list ap;
    va_start(ap, fmt);
    n += std::vsnprintf(line + n, sizeof(line) - std::size_t(n) - 1, fmt, ap);
    va_end(ap);
    n = std::min<int>(n, int(sizeof(line)) - 2);
    line[n++] = '\n';
    std::fwrite(line, 1, std::size_t(n), stderr);
}

namespace {

/// The MINLOC/MAXLOC pair types, laid out as MPI's C structs.
template <class V>
struct value_index {
    V value;
    int index;
};
template <class V>
struct value_pair {  // MPI_2REAL, MPI_2DOUBLE_PRECISION: the index is a V too
    V value;
    V index;
};

// Integer sums and products wrap (as MPI implementations' do) instead of
// overflowing a signed type (undefined in C++): computed unsigned.
template <class T>
T wrap_sum(T a, T b)
{
    using U = std::make_unsigned_t<T>;
    return T(U(U(a) + U(b)));
}
template <class T>
T wrap_prod(T a, T b)
{
    using U = std::make_unsigned_t<T>;
    // Promote 8- and 16-bit operands to unsigned int, not int (which could overflow).
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return T(U(W(U(a)) * W(U(b))));
}

template <class T, class F>
void apply(void *dst, const void *a, const void *b, std::size_t n, F f)
{
    auto *d = static_cast<T *>(dst);
    const auto *x = static_cast<const T *>(a);
    const auto *y = static_cast<const T *>(b);
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = f(x[i], y[i]);
    }
}

template <class T>
combine_fn integer_op(weft_coll_op op)
{
    switch (op) {
        case WEFT_COLL_SUM:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, wrap_sum<T>);
            };
        case WEFT_COLL_PROD:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, wrap_prod<T>);
            };
        case WEFT_COLL_MIN:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return y < x ? y : x; });
            };
        case WEFT_COLL_MAX:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x < y ? y : x; });
            };
        case WEFT_COLL_BAND:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(x & y); });
            };
        case WEFT_COLL_BOR:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(x | y); });
            };
        case WEFT_COLL_BXOR:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(x ^ y); });
            };
        case WEFT_COLL_LAND:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(x && y); });
            };
        case WEFT_COLL_LOR:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(x || y); });
            };
        case WEFT_COLL_LXOR:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return T(!x != !y); });
            };
        default:
            return nullptr;
    }
}

template <class T>
combine_fn float_op(weft_coll_op op)
{
    switch (op) {
        case WEFT_COLL_SUM:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x + y; });
            };
        case WEFT_COLL_PROD:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x * y; });
            };
        case WEFT_COLL_MIN:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return y < x ? y : x; });
            };
        case WEFT_COLL_MAX:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x < y ? y : x; });
            };
        default:
            return nullptr;
    }
}

template <class T>
combine_fn complex_op(weft_coll_op op)
{
    switch (op) {
        case WEFT_COLL_SUM:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x + y; });
            };
        case WEFT_COLL_PROD:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<T>(d, a, b, n, [](T x, T y) { return x * y; });
            };
        default:
            return nullptr;
    }
}

// MINLOC: the smaller value; on a tie the smaller index. MAXLOC: the larger
// value, ties as MINLOC (MPI 4.1, 6.9.4).
template <class P>
combine_fn loc_op(weft_coll_op op)
{
    switch (op) {
        case WEFT_COLL_MINLOC:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<P>(d, a, b, n, [](P x, P y) {
                    if (y.value < x.value || (!(x.value < y.value) && y.index < x.index)) {
                        return y;
                    }
                    return x;
                });
            };
        case WEFT_COLL_MAXLOC:
            return [](void *d, const void *a, const void *b, std::size_t n) {
                apply<P>(d, a, b, n, [](P x, P y) {
                    if (x.value < y.value || (!(y.value < x.value) && y.index < x.index)) {
                        return y;
                    }
                    return x;
                });
            };
        default:
            return nullptr;
    }
}

}  // namespace

combine_fn combine_of(int datatype, int op_value)
{
    if (op_value < 0 || op_value >= WEFT_COLL_OP_END) {
        return nullptr;
    }
    const auto op = static_cast<weft_coll_op>(op_value);  // in the enum's range
    switch (datatype) {
        case WEFT_COLL_INT8:
            return integer_op<std::int8_t>(op);
        case WEFT_COLL_UINT8:
            return integer_op<std::uint8_t>(op);
        case WEFT_COLL_INT16:
            return integer_op<std::int16_t>(op);
        case WEFT_COLL_UINT16:
            return integer_op<std::uint16_t>(op);
        case WEFT_COLL_INT32:
            return integer_op<std::int32_t>(op);
        case WEFT_COLL_UINT32:
            return integer_op<std::uint32_t>(op);
        case WEFT_COLL_INT64:
            return integer_op<std::int64_t>(op);
        case WEFT_COLL_UINT64:
            return integer_op<std::uint64_t>(op);
        case WEFT_COLL_FLOAT:
            return float_op<float>(op);
        case WEFT_COLL_DOUBLE:
            return float_op<double>(op);
        case WEFT_COLL_LONG_DOUBLE:
            return float_op<long double>(op);
        case WEFT_COLL_FLOAT_COMPLEX:
            return complex_op<std::complex<float>>(op);
        case WEFT_COLL_DOUBLE_COMPLEX:
            return complex_op<std::complex<double>>(op);
        case WEFT_COLL_FLOAT_INT:
            return loc_op<value_index<float>>(op);
        case WEFT_COLL_DOUBLE_INT:
            return loc_op<value_index<double>>(op);
        case WEFT_COLL_LONG_INT:
            return loc_op<value_index<long>>(op);
        case WEFT_COLL_2INT:
            return loc_op<value_index<int>>(op);
        case WEFT_COLL_SHORT_INT:
            return loc_op<value_index<short>>(op);
        case WEFT_COLL_LONG_DOUBLE_INT:
            return loc_op<value_index<long double>>(op);
        case WEFT_COLL_2FLOAT:
            return loc_op<value_pair<float>>(op);
        case WEFT_COLL_2DOUBLE:
            return loc_op<value_pair<double>>(op);
        default:
            return nullptr;
    }
}

std::size_t size_of(int datatype)
{
    switch (datatype) {
        case WEFT_COLL_INT8:
        case WEFT_COLL_UINT8:
            return 1;
        case WEFT_COLL_INT16:
        case WEFT_COLL_UINT16:
            return 2;
        case WEFT_COLL_INT32:
        case WEFT_COLL_UINT32:
        case WEFT_COLL_FLOAT:
            return 4;
        case WEFT_COLL_INT64:
        case WEFT_COLL_UINT64:
        case WEFT_COLL_DOUBLE:
            return 8;
        case WEFT_COLL_LONG_DOUBLE:
            return sizeof(long double);
        case WEFT_COLL_FLOAT_COMPLEX:
            return sizeof(std::complex<float>);
        case WEFT_COLL_DOUBLE_COMPLEX:
            return sizeof(std::complex<double>);
        case WEFT_COLL_FLOAT_INT:
            return sizeof(value_index<float>);
        case WEFT_COLL_DOUBLE_INT:
            return sizeof(value_index<double>);
        case WEFT_COLL_LONG_INT:
            return sizeof(value_index<long>);
        case WEFT_COLL_2INT:
            return sizeof(value_index<int>);
        case WEFT_COLL_SHORT_INT:
            return sizeof(value_index<short>);
        case WEFT_COLL_LONG_DOUBLE_INT:
            return sizeof(value_index<long double>);
        case WEFT_COLL_2FLOAT:
            return sizeof(value_pair<float>);
        case WEFT_COLL_2DOUBLE:
            return sizeof(value_pair<double>);
        default:
            return 0;
    }
}

}  // namespace weft::coll

extern "C" {

size_t weft_coll_datatype_size(enum weft_coll_datatype datatype)
{
    return weft::coll::size_of(weft::coll::raw(datatype));
}

int weft_coll_op_valid(enum weft_coll_datatype datatype, enum weft_coll_op op)
{
    return weft::coll::combine_of(weft::coll::raw(datatype), weft::coll::raw(op)) != nullptr;
}

}  // extern "C"
