/*
 * ompi_weft_types.h: Open MPI's predefined datatypes and reduction ops as
 * weft's (enum weft_datatype, enum weft_atomic_op), shared by the components
 * in netmod/ (coll weft, osc weft). Include after ompi_config.h and mpi.h.
 */
#ifndef WEFT_NETMOD_OMPI_WEFT_TYPES_H
#define WEFT_NETMOD_OMPI_WEFT_TYPES_H

#include <stddef.h>

#include "mpi.h"
#include "ompi/datatype/ompi_datatype.h"
#include "weft/weft.h"

/* The weft type of an MPI basic C type (its elements as laid out in memory), or
 * -1. MPI's byte and C bool are 8-bit unsigned; MPI_AINT, MPI_OFFSET and
 * MPI_COUNT are 64-bit integers on the platforms weft builds for. */
static inline int ompi_weft_datatype(ompi_datatype_t *dt)
{
    static const struct {
        MPI_Datatype mpi;
        int weft;
    } map[] = {
        {MPI_CHAR, WEFT_INT8},
        {MPI_SIGNED_CHAR, WEFT_INT8},
        {MPI_INT8_T, WEFT_INT8},
        {MPI_UNSIGNED_CHAR, WEFT_UINT8},
        {MPI_BYTE, WEFT_UINT8},
        {MPI_UINT8_T, WEFT_UINT8},
        {MPI_C_BOOL, WEFT_UINT8},
        {MPI_SHORT, WEFT_INT16},
        {MPI_INT16_T, WEFT_INT16},
        {MPI_UNSIGNED_SHORT, WEFT_UINT16},
        {MPI_UINT16_T, WEFT_UINT16},
        {MPI_INT, WEFT_INT32},
        {MPI_INT32_T, WEFT_INT32},
        {MPI_UNSIGNED, WEFT_UINT32},
        {MPI_UINT32_T, WEFT_UINT32},
        {MPI_LONG, WEFT_INT64},
        {MPI_LONG_LONG, WEFT_INT64},
        {MPI_LONG_LONG_INT, WEFT_INT64},
        {MPI_INT64_T, WEFT_INT64},
        {MPI_AINT, WEFT_INT64},
        {MPI_OFFSET, WEFT_INT64},
        {MPI_COUNT, WEFT_INT64},
        {MPI_UNSIGNED_LONG, WEFT_UINT64},
        {MPI_UNSIGNED_LONG_LONG, WEFT_UINT64},
        {MPI_UINT64_T, WEFT_UINT64},
        {MPI_FLOAT, WEFT_FLOAT},
        {MPI_DOUBLE, WEFT_DOUBLE},
        {MPI_LONG_DOUBLE, WEFT_LONG_DOUBLE},
        {MPI_C_FLOAT_COMPLEX, WEFT_FLOAT_COMPLEX},
        {MPI_C_COMPLEX, WEFT_FLOAT_COMPLEX},
        {MPI_C_DOUBLE_COMPLEX, WEFT_DOUBLE_COMPLEX},
    };
    static const size_t sizes[WEFT_DATATYPE_COUNT] = {1,
                                                      1,
                                                      2,
                                                      2,
                                                      4,
                                                      4,
                                                      8,
                                                      8,
                                                      sizeof(float),
                                                      sizeof(double),
                                                      sizeof(long double),
                                                      2 * sizeof(float),
                                                      2 * sizeof(double)};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (dt == map[i].mpi) {
            /* Trust the table only where this ABI's size agrees. */
            ptrdiff_t lb = 0;
            ptrdiff_t extent = 0;
            ompi_datatype_get_extent(dt, &lb, &extent);
            return lb == 0 && (size_t)extent == sizes[map[i].weft] ? map[i].weft : -1;
        }
    }
    return -1;
}

/* The weft atomic op of an MPI op (the accumulate ops), or -1 (MINLOC, MAXLOC,
 * user-defined). */
static inline int ompi_weft_atomic_op(struct ompi_op_t *op)
{
    static const struct {
        MPI_Op mpi;
        int weft;
    } map[] = {
        {MPI_SUM, WEFT_SUM},   {MPI_PROD, WEFT_PROD},       {MPI_MIN, WEFT_MIN},
        {MPI_MAX, WEFT_MAX},   {MPI_BAND, WEFT_BAND},       {MPI_BOR, WEFT_BOR},
        {MPI_BXOR, WEFT_BXOR}, {MPI_LAND, WEFT_LAND},       {MPI_LOR, WEFT_LOR},
        {MPI_LXOR, WEFT_LXOR}, {MPI_REPLACE, WEFT_REPLACE}, {MPI_NO_OP, WEFT_NOOP},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (op == map[i].mpi) {
            return map[i].weft;
        }
    }
    return -1;
}

#endif /* WEFT_NETMOD_OMPI_WEFT_TYPES_H */
