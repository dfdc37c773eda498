dnl The verbs transport's part of configure (found by autogen.sh).
AC_DEFUN([WEFT_CONFIGURE_TRANSPORT_VERBS], [
AC_ARG_ENABLE([verbs],
    [AS_HELP_STRING([--enable-verbs=yes|no|auto],
                    [the verbs transport: RDMA on libibverbs (default auto: built when libibverbs is found)])],
    [], [enable_verbs=auto])
weft_verbs=no
AS_IF([test "x$enable_verbs" != xno],
      [PKG_CHECK_MODULES([IBVERBS], [libibverbs], [weft_verbs=yes], [weft_verbs=no])])
AS_IF([test "x$enable_verbs" = xyes && test "x$weft_verbs" = xno],
      [AC_MSG_ERROR([--enable-verbs=yes, but libibverbs was not found (pkg-config libibverbs; Debian: libibverbs-dev)])])
AS_IF([test "x$weft_verbs" = xyes],
      [AC_DEFINE([WEFT_TRANSPORT_VERBS], [1], [the verbs transport is built])
       weft_transports="$weft_transports verbs"])
AM_CONDITIONAL([WEFT_TRANSPORT_VERBS], [test "x$weft_verbs" = xyes])
])
